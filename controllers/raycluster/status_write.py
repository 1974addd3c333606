"""The status phase of a RayCluster reconcile: when to write, what to send, and what we wrote.

:func:`controllers.raycluster.status.compute_status` says what the status is; this module decides
whether and when it goes to the API server: only when a compared field differs, counter-only
changes held back for a short window so workers turning Ready one by one cost one write, and our
own write remembered until the watch shows it, so a lagging cache causes no 409 and no rewrite.
"""

from __future__ import annotations

from typing import Any

from controllers import constants as C
from controllers.common.conditions import is_condition_true
from controllers.common.invalid import invalid_report
from controllers.common.last_write import remember_write
from controllers.common.objects import generation_of
from controllers.raycluster.context import ClusterContext
from controllers.raycluster.status import status_differs
from kuberay_py.client import Conflict, NotFound
from kuberay_py.clock import format_rfc3339
from kuberay_py.log import get_logger
from kuberay_py.objects import Obj, json_copy

__all__ = [
    "became_suspending",
    "coalesce_delay",
    "report_invalid",
    "write_status",
]

log = get_logger(__name__)

# Status fields whose change alone is not urgent (see coalesce_delay).
_SOFT = ("readyWorkerReplicas", "availableWorkerReplicas", "head", "endpoints", "conditions")


def coalesce_delay(ctx: ClusterContext, new: Obj, *, urgent: bool) -> float | None:
    """Seconds to hold back a status write that only moves counters, head details or condition
    reasons/messages, else None.

    Workers turning Ready one by one would otherwise cost one write each; state, reason,
    conditions (HeadPodReady, Provisioned, …), desired counts and generation changes are always
    written at once.
    """
    memo, old = ctx.memo, ctx.cluster.get("status")
    window = ctx.deps.options.status_coalesce_seconds
    if urgent or window <= 0 or not status_differs(old, new) or status_differs(_hard(old or {}), _hard(new)):
        memo.deferred_since = None
        return None
    now = ctx.deps.clock.now()
    if memo.deferred_since is None:
        memo.deferred_since = now
    remaining = memo.deferred_since + window - now
    if remaining <= 0:
        memo.deferred_since = None
        return None
    return remaining


def _hard(status: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in status.items() if k not in _SOFT}
    # A condition flipping status is urgent; a new reason or message alone is not.
    out["conditions"] = sorted((c.get("type"), c.get("status")) for c in status.get("conditions") or [])
    return out


def became_suspending(cluster: Obj, new_status: Obj) -> bool:
    before = (cluster.get("status") or {}).get("conditions")
    after = new_status.get("conditions")
    return is_condition_true(after, C.COND_RAYCLUSTER_SUSPENDING) and not is_condition_true(
        before, C.COND_RAYCLUSTER_SUSPENDING
    )


def _status_body(ctx: ClusterContext, new_status: Obj) -> Obj:
    """A ``/status`` PUT body: the cached object's metadata (its resourceVersion makes a stale
    cache a 409, as controller-runtime's ``Status().Update``) with the new status, stamped now."""
    new_status["lastUpdateTime"] = format_rfc3339(ctx.deps.clock.utcnow())
    return {
        "apiVersion": C.RAYCLUSTERS.api_version,
        "kind": C.RAYCLUSTERS.kind,
        "metadata": json_copy(ctx.cluster["metadata"]),
        "spec": ctx.cluster.get("spec"),
        "status": new_status,
    }


async def write_status(ctx: ClusterContext, new_status: Obj) -> None:
    """Write ``new_status`` when it differs from the cluster's; a 409 is raised (requeue)."""
    if not status_differs(ctx.cluster.get("status"), new_status):
        return
    try:
        written = await ctx.deps.client.update_status(C.RAYCLUSTERS, _status_body(ctx, new_status))
    except NotFound:
        return
    except Conflict:
        ctx.memo.written = None
        # Our cached copy is stale: the newer object is on its way through the watch.
        log.debug("status write conflicted; a newer RayCluster will be reconciled")
        raise
    remember_write(ctx.memo, ctx.cluster, written)


async def report_invalid(ctx: ClusterContext, errors: list[Any]) -> None:
    """An invalid spec: a Warning event once per message and generation, the message in
    ``status.reason``.

    KubeRay sends the event and writes no status; the reason is ours, so the problem is still
    visible once the Event has expired (an hour by default). ``observedGeneration`` is left where
    it was, as KubeRay leaves it: a tool that waits for ``observedGeneration == generation``
    (kstatus, Flux) must not take a rejected spec for one the operator has acted on. Nothing is
    deleted and nothing requeued: the spec change that fixes it triggers a reconcile.
    """
    cluster = ctx.cluster
    report = invalid_report(C.CRD_RAYCLUSTER, cluster, errors)
    reported = (generation_of(cluster), report.message)
    if ctx.memo.invalid_reported != reported:
        ctx.deps.recorder.event(cluster, C.WARNING, report.reason, report.event)
        ctx.memo.invalid_reported = reported
    status = cluster.get("status") or {}
    if status.get("reason") == report.message:
        return
    new_status = json_copy(status)
    new_status["reason"] = report.message
    try:
        await ctx.deps.client.update_status(C.RAYCLUSTERS, _status_body(ctx, new_status))
    except NotFound:
        pass
