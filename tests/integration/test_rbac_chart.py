"""Under KubeRay v1.7.0's Helm chart RBAC, exactly as rendered, the operator is never forbidden.

The chart's ServiceAccount, ClusterRole/Role and bindings (the Helm-default render, cluster-wide,
and the ``singleNamespaceInstall`` render, a Role per watched namespace; and kustomize's
``config/default``, the same rules in ``default``) are applied to an API
server that enforces RBAC (the built-in one with ``rbac=True``, or a real kube-apiserver, which
always does). The operator, wired as ``kuberay-operator run`` wires it (leader election on, in the
chart's namespace; ``--watch-namespace`` for the single-namespace install), runs with that
ServiceAccount's token through KubeRay's samples: a RayCluster, an autoscaling RayCluster (its
Role and RoleBinding go through escalation prevention), a RayService and a RayJob become
ready, then the RayService and the RayCluster are deleted. Its client must have seen no 403
(``rest_client_requests_total{code="403"}``); on the built-in server the server's own list of
refused requests must be empty too. A last request the chart does not allow (list Nodes) proves
that both counters do see a refusal.
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.api.crdgen import write_crds
from controllers.cli.flags import FEATURE_GATES, OperatorFlags
from controllers.cli.operator import build_manager
from controllers.cli.progress import is_ready
from controllers.constants import RAYCLUSTERS, RAYJOBS, RAYSERVICES
from controllers.raysim import RayPodRuntime
from kuberay_py.client import Client, Forbidden, NotFound, Resource
from kuberay_py.client import resources as r
from kuberay_py.client.metrics import REQUESTS_TOTAL
from kuberay_py.envtest import Environment
from tests.polling import eventually

ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / "tests" / "fixtures" / "kuberay" / "install"
SAMPLES = ROOT / "config" / "samples"
WAIT = 240.0  # a bound so a stuck scenario fails; not a performance assertion
SA_NAME = "kuberay-operator"

# The chart's --feature-gates (templates/deployment.yaml defaults), where kuberay-py has the gate.
CHART_GATES = {
    "RayClusterStatusConditions": True,
    "RayJobDeletionPolicy": True,
    "RayMultiHostIndexing": True,
    "RayServiceIncrementalUpgrade": True,
    "RayCronJob": False,
}
RBAC_KINDS: dict[str, Resource] = {
    "ServiceAccount": r.SERVICEACCOUNTS,
    "ClusterRole": r.CLUSTERROLES,
    "ClusterRoleBinding": r.CLUSTERROLEBINDINGS,
    "Role": r.ROLES,
    "RoleBinding": r.ROLEBINDINGS,
}
SAMPLE_KINDS: dict[str, Resource] = {
    "RayCluster": RAYCLUSTERS,
    "RayService": RAYSERVICES,
    "RayJob": RAYJOBS,
    "ConfigMap": r.CONFIGMAPS,
}


def chart_rbac(render: str) -> list[dict[str, Any]]:
    """The RBAC objects of one rendered chart, in the render's order (ServiceAccount first)."""
    docs = [d for d in yaml.safe_load_all((INSTALL / render).read_text()) if d]
    return [d for d in docs if d["kind"] in RBAC_KINDS]


def samples() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for name in ("ray-cluster.sample.yaml", "ray-service.sample.yaml", "ray-job.sample.yaml"):
        docs += [d for d in yaml.safe_load_all((SAMPLES / name).read_text()) if d]
    cluster = next(d for d in docs if d["kind"] == "RayCluster")
    autoscaling = copy.deepcopy(cluster)
    autoscaling["metadata"]["name"] = "autoscaling"
    autoscaling["spec"]["enableInTreeAutoscaling"] = True
    return [*docs, autoscaling]


def forbidden_seen(host: str) -> float:
    """``rest_client_requests_total{code="403"}`` summed over methods, for this API server."""
    total = 0.0
    for metric in REQUESTS_TOTAL.collect():
        for sample in metric.samples:
            labels = sample.labels
            if sample.name.endswith("_total") and labels.get("code") == "403" and labels.get("host") == host:
                total += sample.value
    return total


async def _ensure_namespace(client: Client, name: str) -> None:
    try:
        await client.create(r.NAMESPACES, {"metadata": {"name": name}})
    except Exception as e:  # "default" exists; any other failure is real
        if getattr(e, "status", None) != 409:
            raise


async def _gone(client: Client, res: Resource, name: str, namespace: str) -> bool:
    try:
        await client.get(res, name, namespace)
    except NotFound:
        return True
    return False


async def _granted(client: Client, verb: str, group: str, resource: str, namespace: str) -> bool:
    """A SelfSubjectAccessReview: whether the server already applies a binding just written."""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {
            "resourceAttributes": {"verb": verb, "group": group, "resource": resource, "namespace": namespace}
        },
    }
    answer = await client.request(
        "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body=review
    )
    return bool(answer["status"]["allowed"])


@pytest.mark.parametrize(
    ("render", "operator_ns", "workload_ns", "watch", "gates"),
    [
        ("helm-chart-v1.7.0-default.yaml", "kuberay-system", "default", False, CHART_GATES),
        ("helm-chart-v1.7.0-single-namespace.yaml", "ray-ns", "ray-ns", True, CHART_GATES),
        # kustomize's config/default: the same rules, in the default namespace, default gates.
        ("kustomize-config-default-v1.7.0.yaml", "default", "default", False, {}),
    ],
    ids=["helm-cluster-wide", "helm-single-namespace", "kustomize"],
)
async def test_operator_under_chart_rbac_is_never_forbidden(
    tmp_path: Path, render: str, operator_ns: str, workload_ns: str, watch: bool, gates: dict[str, bool]
) -> None:
    write_crds(str(tmp_path))
    async with (
        Environment([str(tmp_path)], simulate=True, pod_runtime=RayPodRuntime(), rbac=True) as env,
        env.new_client() as admin,
    ):
        await _ensure_namespace(admin, operator_ns)
        await _ensure_namespace(admin, workload_ns)
        for doc in chart_rbac(render):
            meta = doc["metadata"]
            await admin.create(RBAC_KINDS[doc["kind"]], doc, meta.get("namespace"))
        config = await env.service_account_config(operator_ns, SA_NAME)
        host = config.host.split("://", 1)[1]
        before = forbidden_seen(host)
        async with Client(config) as probe:
            # A real kube-apiserver authorizes from informer caches: start once both bindings apply
            # (the operator's role grants RayClusters, only the leader-election Role ConfigMaps).
            await eventually(
                lambda: _granted(probe, "watch", "ray.io", "rayclusters", workload_ns), "operator role", WAIT
            )
            await eventually(
                lambda: _granted(probe, "create", "", "configmaps", operator_ns), "leader-election role", WAIT
            )

        known = {k: v for k, v in gates.items() if k in FEATURE_GATES}
        flags = OperatorFlags(
            metrics_addr="0",
            health_probe_bind_address="0",
            leader_election_namespace=operator_ns,
            watch_namespace=[workload_ns] if watch else [],
            feature_gates={**FEATURE_GATES, **known},
        )
        manager = build_manager(config, flags, leader_election=True)
        run = asyncio.create_task(manager.run(install_signal_handlers=False))
        try:
            applied = []
            for doc in samples():
                res = SAMPLE_KINDS[doc["kind"]]
                applied.append((res, (await admin.create(res, doc, workload_ns))["metadata"]["name"]))

            async def all_ready() -> bool:
                for res, name in applied:
                    if not is_ready(await admin.get(res, name, workload_ns)):
                        return False
                return True

            await eventually(all_ready, "samples ready under the chart's RBAC", WAIT)
            for res, name in ((RAYSERVICES, "rayservice-sample"), (RAYCLUSTERS, "raycluster-kuberay")):
                await admin.delete(res, name, workload_ns)
                await eventually(
                    lambda res=res, name=name: _gone(admin, res, name, workload_ns), f"{name} deleted", WAIT
                )
            assert not run.done(), "the operator stopped"
        finally:
            manager.stop()
            await asyncio.wait_for(run, 60)

        assert forbidden_seen(host) - before == 0
        if env.server is not None:
            refused = env.server.denials
            assert refused == [], f"requests the chart's RBAC refused: {refused}"
            autoscaler_roles = env.server.objects("rbac.authorization.k8s.io", "roles")
            assert any(o["metadata"]["name"] == "autoscaling" for o in autoscaler_roles)

        # The control: a request outside the chart's RBAC is refused and counted by both.
        async with Client(config) as operator_client:
            with pytest.raises(Forbidden):
                await operator_client.list(r.NODES)
        assert forbidden_seen(host) - before == 1
        if env.server is not None:
            assert [(d.verb, d.resource) for d in env.server.denials] == [("list", "nodes")]
