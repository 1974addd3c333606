"""The upgrade rules: which RayService spec changes need a new RayCluster, and which don't.

KubeRay decides with a hash of ``spec.rayClusterConfig`` in which the fields the autoscaler or a
user may change on a live cluster are *muted*: every worker group's ``replicas``, ``minReplicas``,
``maxReplicas``, ``scaleStrategy.workersToDelete``, ``template.spec.tolerations`` and
``template.spec.schedulingGates``; the head's tolerations and scheduling gates; ``upgradeStrategy``
and ``suspend``. A replica-only change therefore hashes the same and triggers nothing. A change
that only appends worker groups is recognised by hashing the goal spec truncated to the cluster's
original number of groups (the "partial hash"); such a cluster is updated in place.

The hash is SHA-1 over canonical JSON (sorted keys; ``null``, ``{}`` and ``[]`` dropped, like Go's
``omitempty``), base32hex-encoded as KubeRay does. It is not byte-identical to KubeRay's Go
encoding (that depends on Go struct field order); see docs/differences.md.
"""

from __future__ import annotations

import base64
import copy
import hashlib
from typing import Any

import orjson

from controllers import constants as c

__all__ = [
    "cluster_hash_matches",
    "cluster_spec_for_hashing",
    "is_zero_downtime_enabled",
    "should_prepare_new_cluster",
    "should_update_cluster",
    "spec_hash",
    "spec_hash_of_first_groups",
]

UPGRADE_NEW_CLUSTER = "NewCluster"
UPGRADE_NONE = "None"
UPGRADE_INCREMENTAL = "NewClusterWithIncrementalUpgrade"

_MUTED_WORKER_FIELDS = ("replicas", "minReplicas", "maxReplicas")
_MUTED_POD_SPEC_FIELDS = ("tolerations", "schedulingGates")


def _prune_empty(value: Any) -> Any:
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            pruned = _prune_empty(item)
            if pruned is None or pruned == {} or pruned == []:
                continue
            out[key] = pruned
        return out
    if isinstance(value, list):
        return [_prune_empty(v) for v in value]
    return value


def cluster_spec_for_hashing(cluster_spec: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of the spec with the muted fields removed (the input is never mutated)."""
    spec = copy.deepcopy(cluster_spec)
    spec.pop("suspend", None)
    spec.pop("upgradeStrategy", None)
    head_pod_spec = spec.get("headGroupSpec", {}).get("template", {}).get("spec")
    if isinstance(head_pod_spec, dict):
        for field in _MUTED_POD_SPEC_FIELDS:
            head_pod_spec.pop(field, None)
    for group in spec.get("workerGroupSpecs") or []:
        if not isinstance(group, dict):
            continue
        for field in _MUTED_WORKER_FIELDS:
            group.pop(field, None)
        scale = group.get("scaleStrategy")
        if isinstance(scale, dict):
            scale.pop("workersToDelete", None)
        pod_spec = group.get("template", {}).get("spec")
        if isinstance(pod_spec, dict):
            for field in _MUTED_POD_SPEC_FIELDS:
                pod_spec.pop(field, None)
    result: dict[str, Any] = _prune_empty(spec)
    return result


def spec_hash(cluster_spec: dict[str, Any]) -> str:
    """The value of ``ray.io/hash-without-replicas-and-workers-to-delete`` for this spec."""
    canonical = orjson.dumps(cluster_spec_for_hashing(cluster_spec), option=orjson.OPT_SORT_KEYS)
    return base64.b32hexencode(hashlib.sha1(canonical, usedforsecurity=False).digest()).decode()


def spec_hash_of_first_groups(cluster_spec: dict[str, Any], n_groups: int) -> str:
    """The hash of the spec truncated to its first ``n_groups`` worker groups (the partial hash)."""
    truncated = dict(cluster_spec)
    truncated["workerGroupSpecs"] = list(cluster_spec.get("workerGroupSpecs") or [])[:n_groups]
    return spec_hash(truncated)


def is_zero_downtime_enabled(rayservice_spec: dict[str, Any], env: dict[str, str]) -> bool:
    """``spec.upgradeStrategy.type`` wins; unset, ``ENABLE_ZERO_DOWNTIME`` != "false" means yes."""
    strategy = (rayservice_spec.get("upgradeStrategy") or {}).get("type")
    if strategy in (UPGRADE_NEW_CLUSTER, UPGRADE_INCREMENTAL):
        return True
    if strategy == UPGRADE_NONE:
        return False
    return env.get(c.ENABLE_ZERO_DOWNTIME, "true").strip().lower() != "false"


def cluster_hash_matches(
    cluster: dict[str, Any], goal_cluster_spec: dict[str, Any], *, partial: bool
) -> bool:
    """KubeRay's isClusterSpecHashEqual.

    With ``partial``, only the first N goal worker groups are hashed, N being the cluster's
    ``ray.io/num-worker-groups``: a match means the goal only appended groups at the end.
    """
    annotations = (cluster.get("metadata") or {}).get("annotations") or {}
    current = annotations.get(c.HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_KEY, "")
    if not partial:
        return bool(current) and current == spec_hash(goal_cluster_spec)
    try:
        n_groups = int(annotations.get(c.NUM_WORKER_GROUPS_KEY, ""))
    except ValueError:
        return True  # as KubeRay: an unreadable group count means "update in place"
    if len(goal_cluster_spec.get("workerGroupSpecs") or []) < n_groups:
        return False
    return bool(current) and current == spec_hash_of_first_groups(goal_cluster_spec, n_groups)


def should_update_cluster(
    cluster: dict[str, Any] | None,
    goal_cluster_spec: dict[str, Any],
    *,
    is_active: bool,
    upgrade_in_progress: bool,
) -> bool:
    """KubeRay's shouldUpdateCluster: appended worker groups, or an active cluster to re-stamp."""
    if cluster is None:
        return False
    if is_active:
        if upgrade_in_progress:
            return False  # during an upgrade the goal is compared with the pending cluster only
        annotations = (cluster.get("metadata") or {}).get("annotations") or {}
        if annotations.get(c.KUBERAY_VERSION_KEY) != c.KUBERAY_VERSION:
            return True
    if cluster_hash_matches(cluster, goal_cluster_spec, partial=False):
        return False
    return cluster_hash_matches(cluster, goal_cluster_spec, partial=True)


def should_prepare_new_cluster(
    active: dict[str, Any] | None,
    pending: dict[str, Any] | None,
    goal_cluster_spec: dict[str, Any],
    *,
    pending_is_serving: bool,
    zero_downtime: bool,
) -> bool:
    """KubeRay's shouldPrepareNewCluster: the first cluster, or a zero-downtime upgrade."""
    if pending_is_serving:
        return False
    if active is None and pending is None:
        return True
    cluster = pending if pending is not None else active
    assert cluster is not None
    if cluster_hash_matches(cluster, goal_cluster_spec, partial=False):
        return False
    if cluster_hash_matches(cluster, goal_cluster_spec, partial=True):
        return False
    return zero_downtime
