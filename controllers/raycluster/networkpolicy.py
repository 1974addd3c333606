"""The NetworkPolicies of ``spec.networkPolicy`` (gate RayClusterNetworkPolicy): pure builders.

One policy for the head (``<cluster>-head``) and one per worker group
(``<cluster>-workers-<group>``), as KubeRay v1.7.0's NetworkPolicy controller builds them:

* the mode (``DenyAll`` when unset) decides which directions are restricted: a restricted
  direction is listed in ``policyTypes`` and gets the base rule (all ports to/from Pods of the
  same cluster) followed by the user's rules; an unrestricted one is left out entirely;
* the head additionally admits a K8sJobMode RayJob's submitter Pods on the dashboard port,
  because that Pod lives outside the cluster but must reach it;
* a ``workerGroups`` entry replaces (does not extend) the ``worker`` rules for its group;
* DNS and the API server are never added: the operator cannot know how either is reached.

The controller (:mod:`.networkpolicy_controller`) compares with :func:`same_policy` after
:func:`normalised_spec`, so a rule written without ``protocol`` (the API server defaults it to
TCP) is not rewritten on every reconcile.
"""

from __future__ import annotations

import copy
from typing import Any

from controllers import constants as C
from controllers.common import cluster as common
from controllers.common.objects import new_child
from kuberay_py.client.resources import NETWORKPOLICIES

__all__ = [
    "build_head_policy",
    "build_policies",
    "build_worker_policy",
    "head_policy_name",
    "normalised_spec",
    "same_policy",
    "worker_policy_name",
]

SUBMISSION_MODE_LABEL = "ray.io/job-submission-mode"
_INGRESS_MODES = ("DenyAll", "DenyAllIngress")
_EGRESS_MODES = ("DenyAll", "DenyAllEgress")


def head_policy_name(cluster_name: str) -> str:
    return f"{cluster_name}-head"


def worker_policy_name(cluster_name: str, group: str) -> str:
    return f"{cluster_name}-workers-{group}"


def _mode(cluster: dict[str, Any]) -> str:
    return str((common.spec_of(cluster).get("networkPolicy") or {}).get("mode") or "DenyAll")


def _same_cluster_peer(cluster: dict[str, Any]) -> dict[str, Any]:
    return {"podSelector": {"matchLabels": {C.RAY_CLUSTER_LABEL_KEY: cluster["metadata"]["name"]}}}


def _labels(cluster: dict[str, Any], group: str) -> dict[str, str]:
    return {
        C.RAY_CLUSTER_LABEL_KEY: cluster["metadata"]["name"],
        C.RAY_NODE_GROUP_LABEL_KEY: group,
        C.KUBERNETES_APPLICATION_NAME_LABEL_KEY: C.APPLICATION_NAME,
        C.KUBERNETES_CREATED_BY_LABEL_KEY: C.COMPONENT_NAME,
    }


def _dashboard_port(cluster: dict[str, Any]) -> int:
    """``dashboard-port`` from the head's rayStartParams when it is an integer, else 8265."""
    raw = ((common.spec_of(cluster).get("headGroupSpec") or {}).get("rayStartParams") or {}).get(
        "dashboard-port"
    )
    try:
        return int(str(raw))
    except ValueError:
        return C.DEFAULT_DASHBOARD_PORT


def _submitter_peer(cluster: dict[str, Any]) -> dict[str, Any] | None:
    """The submitter Pods of the RayJob controlling this cluster, in K8sJobMode only: the other
    modes have no Pod outside the cluster that talks to the dashboard."""
    meta = cluster["metadata"]
    if (meta.get("labels") or {}).get(SUBMISSION_MODE_LABEL) != "K8sJobMode":
        return None
    for ref in meta.get("ownerReferences") or []:
        if (
            ref.get("kind") == C.CRD_RAYJOB
            and ref.get("controller")
            and str(ref.get("apiVersion", "")).startswith("ray.io/")
        ):
            return {
                "podSelector": {
                    "matchLabels": {
                        C.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY: ref["name"],
                        C.RAY_ORIGINATED_FROM_CRD_LABEL_KEY: C.CRD_RAYJOB,
                    }
                }
            }
    return None


def _policy(
    cluster: dict[str, Any],
    name: str,
    group: str,
    selector: dict[str, str],
    ingress: list[dict[str, Any]] | None,
    egress: list[dict[str, Any]] | None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"podSelector": {"matchLabels": selector}}
    types = []
    if ingress is not None:
        types.append("Ingress")
        spec["ingress"] = ingress
    if egress is not None:
        types.append("Egress")
        spec["egress"] = egress
    spec["policyTypes"] = types
    return new_child(NETWORKPOLICIES, name, cluster, labels=_labels(cluster, group), spec=spec)


def _rules(custom: dict[str, Any] | None, key: str) -> list[dict[str, Any]]:
    return copy.deepcopy(list((custom or {}).get(key) or []))


def build_head_policy(cluster: dict[str, Any]) -> dict[str, Any]:
    mode = _mode(cluster)
    custom = (common.spec_of(cluster).get("networkPolicy") or {}).get("head")
    ingress = egress = None
    if mode in _INGRESS_MODES:
        ingress = [{"from": [_same_cluster_peer(cluster)]}]
        submitter = _submitter_peer(cluster)
        if submitter is not None:
            ingress.append(
                {"from": [submitter], "ports": [{"protocol": "TCP", "port": _dashboard_port(cluster)}]}
            )
        ingress += _rules(custom, "ingressRules")
    if mode in _EGRESS_MODES:
        egress = [{"to": [_same_cluster_peer(cluster)]}, *_rules(custom, "egressRules")]
    name = cluster["metadata"]["name"]
    selector = {C.RAY_CLUSTER_LABEL_KEY: name, C.RAY_NODE_TYPE_LABEL_KEY: "head"}
    return _policy(
        cluster, head_policy_name(name), C.RAY_NODE_HEAD_GROUP_LABEL_VALUE, selector, ingress, egress
    )


def _group_rules(cluster: dict[str, Any], group: str) -> dict[str, Any] | None:
    """The group's ``workerGroups`` entry if there is one (it replaces), else the ``worker`` rules."""
    policy = common.spec_of(cluster).get("networkPolicy") or {}
    for entry in policy.get("workerGroups") or []:
        if entry.get("groupName") == group:
            rules: dict[str, Any] = entry
            return rules
    worker: dict[str, Any] | None = policy.get("worker")
    return worker


def build_worker_policy(cluster: dict[str, Any], group: str) -> dict[str, Any]:
    mode = _mode(cluster)
    custom = _group_rules(cluster, group)
    ingress = egress = None
    if mode in _INGRESS_MODES:
        ingress = [{"from": [_same_cluster_peer(cluster)]}, *_rules(custom, "ingressRules")]
    if mode in _EGRESS_MODES:
        egress = [{"to": [_same_cluster_peer(cluster)]}, *_rules(custom, "egressRules")]
    name = cluster["metadata"]["name"]
    selector = {
        C.RAY_CLUSTER_LABEL_KEY: name,
        C.RAY_NODE_TYPE_LABEL_KEY: "worker",
        C.RAY_NODE_GROUP_LABEL_KEY: group,
    }
    return _policy(cluster, worker_policy_name(name, group), group, selector, ingress, egress)


def build_policies(cluster: dict[str, Any]) -> list[dict[str, Any]]:
    """The head's policy, then one per worker group in spec order."""
    groups = [str(g.get("groupName") or "") for g in common.spec_of(cluster).get("workerGroupSpecs") or []]
    return [build_head_policy(cluster), *(build_worker_policy(cluster, g) for g in groups)]


def normalised_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` with every rule port's missing ``protocol`` as TCP, the API server's default."""
    out = copy.deepcopy(spec)
    for direction in ("ingress", "egress"):
        for rule in out.get(direction) or []:
            for port in rule.get("ports") or []:
                port.setdefault("protocol", "TCP")
    return out


def _pruned(value: Any) -> Any:
    """Empty lists and nulls dropped: Go leaves an empty slice out of the JSON it sends."""
    if isinstance(value, dict):
        return {k: _pruned(v) for k, v in value.items() if v is not None and v != []}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def same_policy(existing: dict[str, Any], desired: dict[str, Any]) -> bool:
    """Whether ``existing`` already has ``desired``'s spec and labels (then nothing is written)."""
    same_spec: bool = _pruned(existing.get("spec") or {}) == _pruned(normalised_spec(desired["spec"]))
    return same_spec and (existing["metadata"].get("labels") or {}) == desired["metadata"]["labels"]
