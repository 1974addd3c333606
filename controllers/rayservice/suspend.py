"""Phase: RayService ``spec.suspend`` -- tear the serving stack down and bring it back (KubeRay §3.1 step 5).

Suspending: ``Suspending=True`` (SuspendRequested, then SuspendInProgress), ``Ready``,
``UpgradeInProgress`` and ``RollbackInProgress`` False (SuspendInProgress), the cluster names and
endpoint count cleared, every owned RayCluster and Service deleted at once (no deletion delay),
and the incremental upgrade's Gateway and HTTPRoute with them. Atomic, as KubeRay's: once
``Suspending`` is True the deletion runs to completion whatever ``spec.suspend`` says meanwhile
(:func:`driving`). When none is left: ``Suspending=False`` and ``Suspended=True``, the other three
False, all with SuspendComplete. Setting ``suspend: false`` then: ``Suspended=False``
(RayServiceResumed), ``Ready`` and ``UpgradeInProgress`` back to Initializing, and the normal flow
prepares a fresh cluster. The deletions come back through the ``owns`` watches, so nothing polls.
"""

from __future__ import annotations

from controllers import constants as c
from controllers.common.conditions import is_condition_true
from controllers.common.events import delete_once
from controllers.common.objects import is_deleting, owned_by
from controllers.rayservice.cluster import owned_cluster_labels
from controllers.rayservice.clusters import delete_cluster, owned_clusters
from controllers.rayservice.context import ServiceContext
from controllers.rayservice.incremental_phase import delete_gateway_objects
from kuberay_py.client.resources import SERVICES

__all__ = ["driving", "resume", "suspend"]


def driving(ctx: ServiceContext) -> bool:
    """Whether suspension owns this reconcile: asked for, or already under way (atomic)."""
    conditions = ctx.status.get("conditions") or []
    if is_condition_true(conditions, c.COND_RAYSERVICE_SUSPENDING):
        return True
    return bool((ctx.svc.get("spec") or {}).get("suspend"))


async def suspend(ctx: ServiceContext) -> bool:
    """One step of suspending; True once everything is gone."""
    status = ctx.status
    conditions = status.setdefault("conditions", [])
    if is_condition_true(conditions, c.COND_RAYSERVICE_SUSPENDED):
        return True
    if is_condition_true(conditions, c.COND_RAYSERVICE_SUSPENDING):
        reason = c.REASON_SUSPEND_IN_PROGRESS
    else:
        reason = c.REASON_SUSPEND_REQUESTED
        _set_others(ctx, c.REASON_SUSPEND_IN_PROGRESS, "RayService is suspending.")
    ctx.set_condition(c.COND_RAYSERVICE_SUSPENDING, "True", reason, "Suspending the RayService")
    status["activeServiceStatus"] = {}
    status["pendingServiceStatus"] = {}
    status["numServeEndpoints"] = 0
    status["serviceStatus"] = ""
    ctx.memory.serve_configs.drop(ctx.ref.key)
    remaining = 0
    for cluster in owned_clusters(ctx):
        remaining += 1
        if not is_deleting(cluster):
            await delete_cluster(ctx, cluster)
    ns = ctx.ref.namespace
    for service in ctx.deps.cache.list(SERVICES, ns, labels=owned_cluster_labels(ctx.svc)):
        if not owned_by(service, ctx.svc["metadata"].get("uid")):
            continue
        remaining += 1
        if is_deleting(service):
            continue
        name = service["metadata"]["name"]
        await delete_once(
            ctx.deps.recorder,
            ctx.svc,
            ctx.deps.client.delete(SERVICES, name, ns),
            failed=None,  # the error is the reconcile's; KubeRay sends no event for it
            done=("DeletedService", f"Deleted the service {ns}/{name}"),
        )
    remaining += await delete_gateway_objects(ctx)
    if remaining:
        return False
    ctx.set_condition(
        c.COND_RAYSERVICE_SUSPENDING, "False", c.REASON_SUSPEND_COMPLETE, "The RayService is suspended"
    )
    ctx.set_condition(
        c.COND_RAYSERVICE_SUSPENDED, "True", c.REASON_SUSPEND_COMPLETE, "The RayService is suspended"
    )
    _set_others(ctx, c.REASON_SUSPEND_COMPLETE, "RayService is suspended.")
    return True


def _set_others(ctx: ServiceContext, reason: str, message: str) -> None:
    """Ready, UpgradeInProgress and RollbackInProgress are False while suspending/suspended."""
    ctx.set_condition(c.COND_RAYSERVICE_READY, "False", reason, message)
    ctx.set_condition(c.COND_UPGRADE_IN_PROGRESS, "False", reason, "No upgrade in progress.")
    ctx.set_condition(c.COND_ROLLBACK_IN_PROGRESS, "False", reason, "No rollback in progress.")


def resume(ctx: ServiceContext) -> None:
    """``suspend: false`` after a suspension: re-arm the conditions, the normal flow takes over."""
    conditions = ctx.status.setdefault("conditions", [])
    if not is_condition_true(conditions, c.COND_RAYSERVICE_SUSPENDED):
        return
    resumed, initializing = "The RayService was resumed", "RayService is initializing"
    ctx.set_condition(c.COND_RAYSERVICE_SUSPENDED, "False", c.REASON_RAYSERVICE_RESUMED, resumed)
    ctx.set_condition(c.COND_RAYSERVICE_READY, "False", c.REASON_INITIALIZING, initializing)
    ctx.set_condition(c.COND_UPGRADE_IN_PROGRESS, "False", c.REASON_INITIALIZING, initializing)
