"""config/rbac grants exactly what the code needs: derived from the code's calls, compared both ways."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.rbac_scan import Permission, derive

ROOT = Path(__file__).resolve().parents[2]
RBAC = ROOT / "config" / "rbac"
OPTIONAL_RBAC = ROOT / "config" / "rbac-batch-schedulers" / "batch-schedulers.yaml"

# Granted although no call needs it; each must say why the API server requires it.
EXTRA: dict[Permission, str] = {
    ("", "pods", "get"): "escalation prevention: the autoscaler Role the operator creates grants pods get",
    ("", "pods/resize", "patch"): (
        "escalation prevention: the autoscaler Role the operator creates grants pods/resize patch"
    ),
    **{
        ("", "services/proxy", verb): "--use-kubernetes-proxy: dashboard URLs, no client call"
        for verb in ("create", "get", "update")
    },
    ("", "pods/proxy", "get"): "--use-kubernetes-proxy: the head health check URL, no client call",
    ("ray.io", "rayclusters/finalizers", "update"): (
        "OwnerReferencesPermissionEnforcement: Pods/Services/... carry blockOwnerDeletion=true"
    ),
    ("ray.io", "rayservices/finalizers", "update"): (
        "OwnerReferencesPermissionEnforcement: RayClusters/Services carry blockOwnerDeletion=true"
    ),
    ("ray.io", "raycronjobs/finalizers", "update"): (
        "OwnerReferencesPermissionEnforcement: child RayJobs carry blockOwnerDeletion=true"
    ),
    ("ray.io", "rayjobs/finalizers", "update"): (
        "OwnerReferencesPermissionEnforcement: RayClusters/Jobs/Services carry blockOwnerDeletion=true"
    ),
}
# Namespaced in the leader-election Role, not the ClusterRole.
LEADER_ELECTION = {("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")}


def flatten(rules: Iterable[dict[str, Any]]) -> set[Permission]:
    out: set[Permission] = set()
    for rule in rules:
        assert not rule.get("resourceNames") and not rule.get("nonResourceURLs"), rule
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    assert "*" not in (group, resource, verb), f"wildcard in {rule}"
                    out.add((group, resource, verb))
    return out


def load(name: str) -> dict[str, Any]:
    doc = yaml.safe_load((RBAC / name).read_text())
    assert isinstance(doc, dict)
    return doc


def cluster_role() -> set[Permission]:
    role = load("role.yaml")
    assert (role["kind"], role["metadata"]["name"]) == ("ClusterRole", "kuberay-operator")
    return flatten(role["rules"])


def leader_election_role() -> set[Permission]:
    role = load("leader_election_role.yaml")
    assert role["kind"] == "Role"
    return flatten(role["rules"])


def test_the_scan_resolves_every_api_call() -> None:
    unresolved = [str(site) for (group, _, _), sites in derive().items() if group == "?" for site in sites]
    assert not unresolved, "calls whose Resource the scan cannot tell:\n" + "\n".join(unresolved)


def test_the_scan_sees_the_known_calls() -> None:
    # Guards the scanner itself: if it silently stopped matching, the comparison below would pass
    # against an empty set only if role.yaml were empty too, so pin a few representative calls.
    needed = derive()
    assert ("ray.io", "rayclusters/status", "update") in needed
    assert ("", "pods", "deletecollection") in needed
    assert ("discovery.k8s.io", "endpointslices", "watch") in needed
    assert ("rbac.authorization.k8s.io", "roles", "create") in needed  # through _ensure(res=...)
    assert ("events.k8s.io", "events", "patch") in needed
    assert ("batch", "jobs", "delete") in needed  # the RayJob submitter, on suspend/retry
    assert ("ray.io", "rayjobs/status", "update") in needed


def optional_roles() -> set[Permission]:
    """config/rbac-batch-schedulers: the opt-in schedulers' ClusterRoles (granted by KubeRay's chart
    only with that scheduler / gate on)."""
    docs = [d for d in yaml.safe_load_all(OPTIONAL_RBAC.read_text()) if d]
    return flatten(rule for d in docs if d["kind"] == "ClusterRole" for rule in d["rules"])


def test_optional_roles_grant_only_what_the_code_uses() -> None:
    assert optional_roles(), "config/rbac-batch-schedulers has no rules"
    extra = optional_roles() - set(derive())
    assert not extra, f"rbac-batch-schedulers grants what no code uses: {sorted(extra)}"
    assert not optional_roles() & cluster_role(), "a rule is in both role.yaml and rbac-batch-schedulers"


def test_cluster_role_grants_everything_the_code_needs() -> None:
    needed = set(derive()) - LEADER_ELECTION
    missing = needed - cluster_role() - optional_roles()
    sites = derive()
    assert not missing, "role.yaml lacks:\n" + "\n".join(f"{p}: {sites[p][0]}" for p in sorted(missing))


def test_cluster_role_grants_nothing_else() -> None:
    extra = cluster_role() - set(derive()) - set(EXTRA)
    assert not extra, f"role.yaml grants what no code uses (remove, or justify in EXTRA): {sorted(extra)}"
    stale = set(EXTRA) - cluster_role()
    assert not stale, f"EXTRA lists permissions role.yaml no longer grants: {sorted(stale)}"


def test_leader_election_role_is_exactly_the_lease_calls() -> None:
    lease_calls = {p for p in derive() if p[1] == "leases"}
    assert lease_calls == LEADER_ELECTION
    assert leader_election_role() == LEADER_ELECTION
    assert not {p for p in cluster_role() if p[1] == "leases"}


def test_autoscaler_role_is_covered_by_the_operators_own_rules() -> None:
    # RBAC escalation prevention: a Role can only be created by someone holding its permissions.
    from controllers.raycluster.autoscaler import autoscaler_role

    cluster = {
        "metadata": {"name": "rc", "namespace": "ns", "uid": "u"},
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "spec": {},
    }
    granted = flatten(autoscaler_role(cluster)["rules"])
    assert granted <= cluster_role(), sorted(granted - cluster_role())


def test_bindings_point_at_the_service_account_the_deployment_runs_as() -> None:
    sa = load("service_account.yaml")["metadata"]
    manager = list(yaml.safe_load_all((ROOT / "config/manager/manager.yaml").read_text()))
    deployment = next(d for d in manager if d["kind"] == "Deployment")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == sa["name"]
    subject = {"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]}
    for name, kind in (("role_binding.yaml", "ClusterRole"), ("leader_election_role_binding.yaml", "Role")):
        binding = load(name)
        assert binding["roleRef"]["kind"] == kind
        assert binding["subjects"] == [subject]
    assert load("role_binding.yaml")["roleRef"]["name"] == "kuberay-operator"
    assert (
        load("leader_election_role_binding.yaml")["roleRef"]["name"]
        == load("leader_election_role.yaml")["metadata"]["name"]
    )


def test_the_scan_on_a_synthetic_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = """
from kuberay_py.client import resources
from kuberay_py.client.resources import PODS, SECRETS

class Phase:
    async def run(self, res):
        await self.client.update_status(resources.JOBS, {})
        await self.client.patch(PODS, "p", [], "ns", subresource="resize")
        await self.helper(SECRETS, "s")
        await self.client.delete_collection(res)

    async def helper(self, what, name):
        return await self.client.get(what, name)

def wire(manager, pick):
    manager.controller("x").for_(resources.NODES).owns(PODS)
    manager.cache.informer_for(pick())
"""
    (tmp_path / "synthetic_rbac_module.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    found = derive([(tmp_path / "synthetic_rbac_module.py", "synthetic_rbac_module")])
    resolved = {p for p in found if p[0] != "?"}
    assert resolved == {
        ("batch", "jobs/status", "update"),
        ("", "pods/resize", "patch"),
        ("", "secrets", "get"),  # through the helper's parameter, from its call site
        ("", "nodes", "list"),
        ("", "nodes", "watch"),
        ("", "pods", "list"),
        ("", "pods", "watch"),
    }
    unresolved = sorted((text, verb) for group, text, verb in found if group == "?")
    assert unresolved == [
        ("manager.cache.informer_for(pick())", "list"),
        ("manager.cache.informer_for(pick())", "watch"),
        ("self.client.delete_collection(res)", "deletecollection"),
    ]
