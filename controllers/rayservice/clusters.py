"""Phase: the RayService's RayClusters -- create, update in place, prepare a new one, delete dangling.

Which cluster is active and which pending is read from the status the reconcile is building
(``ctx.status``); the upgrade rules (when to update in place, when to prepare a new cluster) are
the pure ones of :mod:`controllers.rayservice.hashing`.
"""

from __future__ import annotations

import copy
from datetime import timedelta

from controllers import constants as c
from controllers.common.conditions import is_condition_true
from controllers.common.events import create_once, delete_once, write_with_events
from controllers.common.names import generate_name
from controllers.common.objects import annotations_of, is_deleting
from controllers.constants import RAYCLUSTERS
from controllers.rayservice.cluster import (
    DELETION_DEADLINE_ANNOTATION_KEY,
    build_ray_cluster,
    cluster_spec_of,
    owned_cluster_labels,
)
from controllers.rayservice.context import ServiceContext
from controllers.rayservice.hashing import (
    is_zero_downtime_enabled,
    should_prepare_new_cluster,
    should_update_cluster,
)
from controllers.rayservice.options import DEFAULT_DELETION_DELAY
from controllers.rayservice.shapes import ClusterRole, cluster_name, cluster_names
from controllers.rayservice.status import copy_cluster_statuses
from kuberay_py.client import NotFound
from kuberay_py.clock import format_rfc3339, parse_rfc3339
from kuberay_py.log import get_logger
from kuberay_py.objects import Obj

__all__ = [
    "clean_up_dangling_clusters",
    "create_cluster",
    "delete_cluster",
    "owned_clusters",
    "plan_new_cluster",
    "reconcile_clusters",
    "record_cluster_statuses",
]

log = get_logger(__name__)


def owned_clusters(ctx: ServiceContext) -> list[Obj]:
    return ctx.deps.cache.list(RAYCLUSTERS, ctx.ref.namespace, labels=owned_cluster_labels(ctx.svc))


async def clean_up_dangling_clusters(ctx: ServiceContext) -> None:
    """Delete clusters that are neither active nor pending once their deadline passed.

    The deadline is an annotation on the cluster, so it survives an operator restart.
    """
    keep = set(cluster_names(ctx.status))
    delay = (ctx.svc.get("spec") or {}).get("rayClusterDeletionDelaySeconds")
    delay_s = DEFAULT_DELETION_DELAY if delay is None else float(delay)
    now = ctx.deps.clock.utcnow()
    for cluster in owned_clusters(ctx):
        cmeta = cluster["metadata"]
        if cmeta["name"] in keep or is_deleting(cluster):
            continue
        deadline = parse_rfc3339(annotations_of(cluster).get(DELETION_DEADLINE_ANNOTATION_KEY))
        if deadline is None:
            deadline = now + timedelta(seconds=delay_s)
            stamp = format_rfc3339(deadline)
            patch = {"metadata": {"annotations": {DELETION_DEADLINE_ANNOTATION_KEY: stamp}}}
            try:
                await ctx.deps.client.patch(RAYCLUSTERS, cmeta["name"], patch, cmeta["namespace"])
            except NotFound:
                continue
            log.info("scheduled dangling RayCluster for deletion", cluster=cmeta["name"], deadline=stamp)
        if now >= deadline:
            await delete_cluster(ctx, cluster)
        else:
            ctx.requeue.at((deadline - now).total_seconds())


async def delete_cluster(ctx: ServiceContext, cluster: Obj) -> None:
    ref = f"{cluster['metadata']['namespace']}/{cluster['metadata']['name']}"
    await delete_once(
        ctx.deps.recorder,
        ctx.svc,
        ctx.deps.client.delete(
            RAYCLUSTERS,
            cluster["metadata"]["name"],
            cluster["metadata"]["namespace"],
            propagation_policy="Background",
        ),
        failed=(c.EVENT_FAILED_TO_DELETE_RAYCLUSTER, f"Failed to delete the RayCluster {ref}: {{error}}"),
        done=(c.EVENT_DELETED_RAYCLUSTER, f"Deleted the RayCluster {ref}"),
    )


async def reconcile_clusters(ctx: ServiceContext) -> tuple[Obj | None, Obj | None]:
    """The active and pending clusters from the cache: a missing pending one is created, and
    either is updated in place when only what KubeRay updates in place changed."""
    ns = ctx.ref.namespace
    active_name, pending_name = cluster_name(ctx.status, "active"), cluster_name(ctx.status, "pending")
    active = ctx.deps.cache.get(RAYCLUSTERS, active_name, ns) if active_name else None
    pending = ctx.deps.cache.get(RAYCLUSTERS, pending_name, ns) if pending_name else None
    if pending_name and pending is None:
        return active, await create_cluster(ctx, pending_name)
    goal = cluster_spec_of(ctx.svc)
    upgrading = is_condition_true(ctx.status.get("conditions"), c.COND_UPGRADE_IN_PROGRESS)
    if active is not None and should_update_cluster(
        active, goal, is_active=True, upgrade_in_progress=upgrading
    ):
        active = await _update_cluster(ctx, active, "active")
    if pending is not None and should_update_cluster(
        pending, goal, is_active=False, upgrade_in_progress=upgrading
    ):
        pending = await _update_cluster(ctx, pending, "pending")
    return active, pending


def plan_new_cluster(
    ctx: ServiceContext, active: Obj | None, pending: Obj | None, *, pending_is_serving: bool
) -> str | None:
    """The name of a new pending cluster to prepare (recorded in the status now, created after
    the status write), or None when the current clusters match the spec."""
    spec = ctx.svc.get("spec") or {}
    zero_downtime = is_zero_downtime_enabled(spec, dict(ctx.deps.options.env))
    if not should_prepare_new_cluster(
        active,
        pending,
        cluster_spec_of(ctx.svc),
        pending_is_serving=pending_is_serving,
        zero_downtime=zero_downtime,
    ):
        return None
    name = generate_name(ctx.ref.name)
    ctx.status["pendingServiceStatus"] = {"rayClusterName": name}
    log.info("preparing a new pending RayCluster", cluster=name)
    return name


async def create_cluster(ctx: ServiceContext, name: str, body: Obj | None = None) -> Obj:
    """Create the RayCluster ``name`` (``body``: a manifest other than the goal, e.g. replicas cleared)."""
    ns = ctx.ref.namespace
    created: Obj | None = await create_once(
        ctx.deps.recorder,
        ctx.svc,
        ctx.deps.client.create(RAYCLUSTERS, body or build_ray_cluster(ctx.svc, name), ns),
        failed=(
            c.EVENT_FAILED_TO_CREATE_RAYCLUSTER,
            f"Failed to create the RayCluster {ns}/{name}: {{error}}",
        ),
        done=(c.EVENT_CREATED_RAYCLUSTER, f"Created the RayCluster {ns}/{name}"),
    )
    if created is None:
        existing: Obj = await ctx.deps.client.get(RAYCLUSTERS, name, ns)
        return existing
    return created


async def _update_cluster(ctx: ServiceContext, cluster: Obj, role: ClusterRole) -> Obj:
    """KubeRay's modifyRayCluster: the goal spec, labels and annotations; ``suspend`` is kept."""
    goal = build_ray_cluster(ctx.svc, cluster["metadata"]["name"])
    body = copy.deepcopy(cluster)
    suspend = (cluster.get("spec") or {}).get("suspend")
    body["spec"] = goal["spec"]
    if suspend is not None:
        body["spec"]["suspend"] = suspend
    body["metadata"]["labels"] = goal["metadata"]["labels"]
    body["metadata"]["annotations"] = goal["metadata"]["annotations"]
    ref = f"{cluster['metadata']['namespace']}/{cluster['metadata']['name']}"
    updated: Obj = await write_with_events(
        ctx.deps.recorder,
        ctx.svc,
        ctx.deps.client.update(RAYCLUSTERS, body),
        failed=(
            c.EVENT_FAILED_TO_UPDATE_RAYCLUSTER,
            f"Failed to update the {role} RayCluster {ref}: {{error}}",
        ),
        done=(c.EVENT_UPDATED_RAYCLUSTER, f"Updated the {role} RayCluster {ref}"),
    )
    return updated


def record_cluster_statuses(ctx: ServiceContext, active: Obj | None, pending: Obj | None) -> None:
    """Copy each tracked cluster's status into ``rayClusterStatus`` (shown, never compared)."""
    copy_cluster_statuses(ctx.status, active, pending)
