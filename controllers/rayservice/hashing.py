"""The upgrade rules: which RayService spec changes need a new RayCluster, and which don't.

KubeRay decides with a hash of ``spec.rayClusterConfig`` in which the fields the autoscaler or a
user may change on a live cluster are *muted*: every worker group's ``replicas``, ``minReplicas``,
``maxReplicas``, ``scaleStrategy.workersToDelete``, ``template.spec.tolerations`` and
``template.spec.schedulingGates``; the head's tolerations and scheduling gates; ``upgradeStrategy``
and ``suspend``. A replica-only change therefore hashes the same and triggers nothing. A change
that only appends worker groups is recognised by hashing the goal spec truncated to the cluster's
original number of groups (the "partial hash"); such a cluster is updated in place.

The hashes themselves are byte-identical to KubeRay v1.7's (``controllers.spechash``), so a
RayService whose cluster KubeRay created is recognised as up to date, and the reverse.
"""

from __future__ import annotations

from typing import Any

from controllers import constants as c
from controllers.spechash import rayservice_cluster_hash, rayservice_partial_hash

__all__ = [
    "cluster_hash_matches",
    "is_zero_downtime_enabled",
    "should_prepare_new_cluster",
    "should_update_cluster",
    "spec_hash",
    "spec_hash_of_first_groups",
]

UPGRADE_NEW_CLUSTER = "NewCluster"
UPGRADE_NONE = "None"
UPGRADE_INCREMENTAL = "NewClusterWithIncrementalUpgrade"


def spec_hash(cluster_spec: dict[str, Any]) -> str:
    """The value of ``ray.io/hash-without-replicas-and-workers-to-delete`` for this spec."""
    return rayservice_cluster_hash(cluster_spec)


def spec_hash_of_first_groups(cluster_spec: dict[str, Any], n_groups: int) -> str:
    """The hash of the spec truncated to its first ``n_groups`` worker groups (the partial hash)."""
    return rayservice_partial_hash(cluster_spec, n_groups)


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
    current = str(annotations.get(c.HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_KEY, ""))
    if not partial:
        return current == spec_hash(goal_cluster_spec)
    try:
        n_groups = int(annotations.get(c.NUM_WORKER_GROUPS_KEY, ""))
    except ValueError:
        return True  # as KubeRay: an unreadable group count means "update in place"
    # Fewer goal groups than N gives an empty goal hash, which only a cluster without the
    # annotation matches (KubeRay's isClusterSpecHashEqual).
    return current == spec_hash_of_first_groups(goal_cluster_spec, n_groups)


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
