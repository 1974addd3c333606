"""The ``NewClusterWithIncrementalUpgrade`` phase: one reconcile of a RayService in incremental mode.

KubeRay's order (docs/reference/incremental-upgrade.md §4), after the clusters were created or updated and the
head labels synced: the rollback state; Serve on the pending then the active cluster (config and
capacity steps); the per-cluster serve Services, the Gateway and the HTTPRoute with this pass's
traffic step; the head Service; then status (weights, promotion, rollback completion, a new pending
cluster) and one status write.

Event driven: Gateway and HTTPRoute events (their status included) and the per-cluster Services'
EndpointSlices wake the RayService through the watches ``setup`` adds; the step timer is a requeue
at ``lastTrafficMigratedTime + intervalSeconds`` on the injected clock; Serve is polled only while
its applications deploy or right after a PUT. Status is written only when a value changed (KubeRay
rewrites it every reconcile).
"""

from __future__ import annotations

import copy
from typing import Any, cast

from controllers import constants as c
from controllers.api.rayservice import ClusterUpgradeOptions
from controllers.common.conditions import is_condition_true
from controllers.common.events import create_once, delete_once, write_with_events
from controllers.common.heads import head_pod
from controllers.common.names import generate_name
from controllers.common.objects import is_deleting, owned_by
from controllers.common.pods import is_running_and_ready
from controllers.rayservice.cluster import build_ray_cluster, cluster_spec_of
from controllers.rayservice.clusters import create_cluster
from controllers.rayservice.context import ServiceContext
from controllers.rayservice.gateway import (
    build_cluster_serve_service,
    build_gateway,
    build_httproute,
    cluster_serve_service_name,
    gateway_differs,
    gateway_name,
    gateway_ready,
    httproute_differs,
    httproute_name,
    httproute_ready,
)
from controllers.rayservice.hashing import UPGRADE_INCREMENTAL, should_prepare_new_cluster, spec_hash
from controllers.rayservice.incremental_serve import ServeOutcome, UpgradeState, serve_cluster
from controllers.rayservice.incremental_steps import (
    Progress,
    next_traffic_step_at,
    rollback_complete,
    should_promote,
    traffic_step,
)
from controllers.rayservice.services import ServeServiceError, build_rayservice_head_service
from controllers.rayservice.status import calculate_conditions, copy_cluster_statuses, rfc3339
from controllers.rayservice.traffic import apply_service, count_endpoints
from kuberay_py.client import Conflict, Resource
from kuberay_py.client.resources import GATEWAYS, HTTPROUTES
from kuberay_py.log import get_logger
from kuberay_py.objects import Obj

__all__ = [
    "COND_GATEWAY_API_AVAILABLE",
    "create_pending_cluster",
    "delete_gateway_objects",
    "is_incremental",
    "pending_head_ready",
    "reconcile_incremental",
]

log = get_logger(__name__)

COND_GATEWAY_API_AVAILABLE = "GatewayAPIAvailable"  # kuberay-py only
REASON_GATEWAY_API_NOT_INSTALLED = "GatewayAPINotInstalled"
REASON_DESIRED_SPEC_CHANGED = "DesiredClusterSpecChanged"
MSG_REVERTED = "Goal state reverted to original cluster, rolling back."
MSG_CHANGED = "Goal state changed mid-upgrade, rolling back to original cluster."
MSG_ROLLBACK_COMPLETE = "Rollback complete, active Ray cluster exists and no pending Ray cluster"
GATEWAY_API_MISSING = (
    "NewClusterWithIncrementalUpgrade needs the Gateway API (gateway.networking.k8s.io/v1 Gateway and "
    "HTTPRoute), which this cluster does not serve; install its CRDs and a Gateway controller, then "
    "restart the operator"
)


def is_incremental(ctx: ServiceContext) -> bool:
    """KubeRay's IsIncrementalUpgradeEnabled: the gate is on and the type is exactly incremental."""
    strategy = (ctx.svc.get("spec") or {}).get("upgradeStrategy") or {}
    return ctx.deps.options.incremental_upgrade and strategy.get("type") == UPGRADE_INCREMENTAL


def pending_head_ready(ctx: ServiceContext, pending: Obj) -> bool:
    """The pending head's readiness, for a rollback. KubeRay reads the cluster's HeadPodReady
    condition, which its RayClusterStatusConditions gate off never writes: there a rollback never
    waits on the pending head, and neither does it here. Gate on, the Pod itself (fresher)."""
    if not ctx.deps.options.cluster_gates.status_conditions:
        return is_condition_true((pending.get("status") or {}).get("conditions"), c.COND_HEAD_POD_READY)
    return is_running_and_ready(head_pod(ctx.deps.cache, ctx.ref.namespace, pending["metadata"]["name"]))


def _conditions(ctx: ServiceContext) -> list[dict[str, Any]]:
    return cast(list[dict[str, Any]], ctx.status.get("conditions") or [])


def _is_true(ctx: ServiceContext, kind: str) -> bool:
    return any(cond.get("type") == kind and cond.get("status") == "True" for cond in _conditions(ctx))


def _drop(ctx: ServiceContext, kind: str) -> None:
    ctx.status["conditions"] = [
        cond for cond in ctx.status.get("conditions") or [] if cond.get("type") != kind
    ]


def _stamp(cluster: Obj) -> str:
    annotations = (cluster.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(c.HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_KEY, ""))


def _rollback_state(ctx: ServiceContext, goal: dict[str, Any], active: Obj, pending: Obj) -> bool:
    """KubeRay's reconcileRollbackState (§7.1): compare the goal's hash with A's and B's."""
    target = spec_hash(goal)
    rolling = _is_true(ctx, c.COND_ROLLBACK_IN_PROGRESS)
    if target == _stamp(active):
        if not rolling:
            ctx.set_condition(c.COND_ROLLBACK_IN_PROGRESS, "True", REASON_DESIRED_SPEC_CHANGED, MSG_REVERTED)
        return True
    if target == _stamp(pending):
        if rolling:
            _drop(ctx, c.COND_ROLLBACK_IN_PROGRESS)
        return False
    if not rolling:
        ctx.set_condition(c.COND_ROLLBACK_IN_PROGRESS, "True", REASON_DESIRED_SPEC_CHANGED, MSG_CHANGED)
    return True


async def _ensure(ctx: ServiceContext, res: Resource, desired: Obj, differs: Any) -> Obj | None:
    """Create ``desired`` if missing, replace its spec if it drifted (KubeRay's rule), with its events."""
    kind, ns, name = res.kind, ctx.ref.namespace, desired["metadata"]["name"]
    existing = ctx.deps.cache.get(res, name, ns)
    if existing is None:
        created: Obj | None = await create_once(  # None: the watch brings it into the cache and wakes us
            ctx.deps.recorder,
            ctx.svc,
            ctx.deps.client.create(res, desired, ns),
            failed=(f"FailedToCreate{kind}", f"Failed to create {kind} {ns}/{name}: {{error}}"),
            done=(f"Created{kind}", f"Created {kind} for RayService {ns}/{ctx.ref.name}"),
        )
        return created
    if not differs(existing, desired):
        return dict(existing)
    body = copy.deepcopy(dict(existing))
    body["spec"] = desired["spec"]
    try:
        updated: Obj = await write_with_events(
            ctx.deps.recorder,
            ctx.svc,
            ctx.deps.client.update(res, body),
            failed=(f"FailedToUpdate{kind}", f"Failed to update the {kind} {ns}/{name}: {{error}}"),
            done=(f"Updated{kind}", f"Updated the {kind} {ns}/{name}"),
            expected=(Conflict,),
        )
    except Conflict:
        return dict(existing)  # a newer version is coming through the watch
    return updated


async def _ensure_cluster_service(ctx: ServiceContext, cluster: Obj) -> None:
    """``<cluster>-serve-svc`` (KubeRay's reconcilePerClusterServeService; its selector never moves)."""
    try:
        desired = build_cluster_serve_service(ctx.svc, cluster)
    except ServeServiceError as exc:
        ctx.warn(c.EVENT_FAILED_TO_CREATE_SERVICE, str(exc))
        return
    await apply_service(ctx, desired)


def _count_endpoints(ctx: ServiceContext, clusters: list[Obj]) -> None:
    """``numServeEndpoints``: ready Pods behind both per-cluster serve Services (KubeRay §3.2)."""
    count_endpoints(ctx, [cluster_serve_service_name(cluster["metadata"]["name"]) for cluster in clusters])


def _put_traffic(status: dict[str, Any], side: str, weight: int, now: str) -> None:
    sub = status.setdefault(side, {})
    if sub.get("trafficRoutedPercent") != weight:
        sub["trafficRoutedPercent"] = weight
        sub["lastTrafficMigratedTime"] = now


def _put_cluster_status(
    status: dict[str, Any], side: str, cluster: Obj | None, serve: ServeOutcome | None
) -> None:
    sub = status.get(side)
    if not sub or not sub.get("rayClusterName") or cluster is None:
        return
    if serve is not None and serve.apps is not None:
        sub["applicationStatuses"] = serve.apps


async def reconcile_incremental(ctx: ServiceContext, active: Obj | None, pending: Obj | None) -> str | None:
    """Everything after the clusters; returns the name of a cluster to create after the status write."""
    spec = ctx.svc.get("spec") or {}
    status = cast(dict[str, Any], ctx.status)
    raw_options = (spec.get("upgradeStrategy") or {}).get("clusterUpgradeOptions") or {}
    options = ClusterUpgradeOptions.model_validate(raw_options)
    if ctx.gateway_api is None or not await ctx.gateway_api.available():
        ctx.warn(REASON_GATEWAY_API_NOT_INSTALLED, GATEWAY_API_MISSING)
        ctx.set_condition(
            COND_GATEWAY_API_AVAILABLE, "False", REASON_GATEWAY_API_NOT_INSTALLED, GATEWAY_API_MISSING
        )
        _count_endpoints(ctx, [x for x in (active, pending) if x is not None])
        calculate_conditions(ctx.status, generation=ctx.generation, now=ctx.deps.clock.utcnow())
        return None
    _drop(ctx, COND_GATEWAY_API_AVAILABLE)
    goal = cluster_spec_of(ctx.svc)
    upgrading = _is_true(ctx, c.COND_UPGRADE_IN_PROGRESS)
    rollback = _is_true(ctx, c.COND_ROLLBACK_IN_PROGRESS)
    if upgrading and active is None:
        ctx.warn("RollbackImpossible", "Active cluster not found, rollback cannot be initiated")
    elif upgrading and active is not None and pending is not None:
        rollback = _rollback_state(ctx, goal, active, pending)

    gateway = ctx.deps.cache.get(GATEWAYS, gateway_name(ctx.svc), ctx.ref.namespace)
    route = ctx.deps.cache.get(HTTPROUTES, httproute_name(ctx.svc), ctx.ref.namespace)
    ready_objects = gateway is not None and gateway_ready(gateway) and httproute_ready(route, gateway)
    state = UpgradeState(
        upgrading=upgrading,
        rollback=rollback,
        capacity_allowed=bool(active is not None and pending is not None and ready_objects),
        surge=options.max_surge,
    )
    b = await serve_cluster(ctx, pending, "pending", state) if pending is not None else None
    a = None
    if active is not None and (
        pending is not None
        or not should_prepare_new_cluster(active, None, goal, pending_is_serving=False, zero_downtime=True)
    ):
        a = await serve_cluster(ctx, active, "active", state)

    for cluster in (active, pending):
        if cluster is not None:
            await _ensure_cluster_service(ctx, cluster)
    gateway = await _ensure(
        ctx, GATEWAYS, build_gateway(ctx.svc, options.gateway_class_name or ""), gateway_differs
    )
    now = ctx.deps.clock.utcnow()
    weights: tuple[int, int] | None = None
    if active is not None and gateway is not None:
        aw, pw = traffic_step(
            Progress.of(status),
            step=options.step_size_percent or 0,
            interval=options.interval_seconds or 1,
            now=now,
            pending_ready=bool(b and b.ready),
            rollback=rollback,
        )
        desired = build_httproute(ctx.svc, active, pending, (aw, pw if pending is not None else None))
        if await _ensure(ctx, HTTPROUTES, desired, httproute_differs) is not None:
            weights = (aw, pw)

    target = None
    if (b and b.ready) or (a and a.ready):
        target = active if upgrading and active is not None else (pending if b and b.ready else active)
    if target is not None:
        await apply_service(ctx, build_rayservice_head_service(ctx.svc, target))

    if target is not None and weights is not None:
        _put_traffic(status, "activeServiceStatus", weights[0], rfc3339(now))
        if pending is not None:
            _put_traffic(status, "pendingServiceStatus", weights[1], rfc3339(now))
    progress = Progress.of(status)
    promoted = False
    if target is not None and pending is not None:
        if upgrading and not rollback and should_promote(progress):
            promoted = True
        elif (
            not upgrading
            and not (status.get("activeServiceStatus") or {}).get("rayClusterName")
            and target is pending
        ):
            promoted = True  # the first cluster of a new RayService
    if promoted:
        log.info(
            "promoting pending cluster", new=(status.get("pendingServiceStatus") or {}).get("rayClusterName")
        )
        status["activeServiceStatus"] = status.get("pendingServiceStatus") or {}
        status["pendingServiceStatus"] = {}
        active, pending, a, b = pending, None, b, None
    completed_rollback = False
    if rollback and pending is not None and active is not None:
        if rollback_complete(progress, pending_healthy=pending_head_ready(ctx, pending)):
            status["pendingServiceStatus"] = {}
            _drop(ctx, c.COND_ROLLBACK_IN_PROGRESS)
            pending, b, rollback, completed_rollback = None, None, False, True

    new_cluster = None
    if not rollback and should_prepare_new_cluster(
        active, pending, goal, pending_is_serving=promoted, zero_downtime=True
    ):
        new_cluster = generate_name(ctx.ref.name)
        first = not (status.get("activeServiceStatus") or {}).get("rayClusterName")
        status["pendingServiceStatus"] = {
            "rayClusterName": new_cluster,
            "targetCapacity": 100 if first else 0,
        }
        log.info("preparing a new pending RayCluster", cluster=new_cluster, incremental=True)

    copy_cluster_statuses(status, active, pending if new_cluster is None else None)
    _put_cluster_status(status, "activeServiceStatus", active, a)
    _put_cluster_status(status, "pendingServiceStatus", pending if new_cluster is None else None, b)
    _count_endpoints(ctx, [x for x in (active, pending) if x is not None])
    calculate_conditions(ctx.status, generation=ctx.generation, now=now)
    if completed_rollback:
        for cond in _conditions(ctx):
            if cond.get("type") == c.COND_UPGRADE_IN_PROGRESS:
                cond["message"] = MSG_ROLLBACK_COMPLETE

    # Wake-ups no watch delivers: Serve deploying or just changed, the step timer, promotion follow-up.
    if promoted or completed_rollback or new_cluster or (a and a.in_progress) or (b and b.in_progress):
        ctx.requeue.at(ctx.deps.options.serve_poll_interval)
    step_at = next_traffic_step_at(
        Progress.of(status), interval=options.interval_seconds or 1, rollback=rollback
    )
    if step_at is not None and pending is not None:
        ctx.requeue.at(max(0.0, (step_at - now).total_seconds()))
    return new_cluster


async def create_pending_cluster(ctx: ServiceContext, name: str) -> None:
    """The new cluster; during an upgrade its worker ``replicas`` are cleared (KubeRay RSC:1522-1531),
    so Serve's target_capacity and the autoscaler size it."""
    body = build_ray_cluster(ctx.svc, name)
    if (ctx.status.get("activeServiceStatus") or {}).get("rayClusterName"):
        for group in body["spec"].get("workerGroupSpecs") or []:
            group.pop("replicas", None)
    await create_cluster(ctx, name, body)


async def delete_gateway_objects(ctx: ServiceContext) -> int:
    """Suspend: delete the RayService's HTTPRoute and Gateway (KubeRay RSC:518-551); how many remain.

    Only where the Gateway API was discovered (no request at all otherwise).
    """
    if ctx.gateway_api is None or ctx.gateway_api.known is not True:
        return 0
    route = await _delete_owned(ctx, HTTPROUTES, httproute_name(ctx.svc))
    gateway = await _delete_owned(ctx, GATEWAYS, gateway_name(ctx.svc))
    return route + gateway


async def _delete_owned(ctx: ServiceContext, res: Resource, name: str) -> int:
    """Delete ``name`` when the RayService owns it; 1 while it still exists, else 0."""
    obj = ctx.deps.cache.get(res, name, ctx.ref.namespace)
    if obj is None or not owned_by(obj, ctx.svc["metadata"].get("uid")):
        return 0
    if is_deleting(obj):
        return 1
    deleted = await delete_once(
        ctx.deps.recorder,
        ctx.svc,
        ctx.deps.client.delete(res, name, ctx.ref.namespace),
        failed=(
            f"FailedToDelete{res.kind}",
            f"Failed to delete {res.kind} {ctx.ref.namespace}/{name}: {{error}}",
        ),
        done=(f"Deleted{res.kind}", f"Deleted {res.kind} {ctx.ref.namespace}/{name}"),
    )
    return 1 if deleted else 0
