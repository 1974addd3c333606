"""The RayCronJob phases (docs/reference/rayjob.md §7.2), plain functions over a :class:`CronContext`.

``validate`` and ``suspended`` stop the reconcile (returning True) after announcing it once per
generation; ``tick`` creates the due ticks' child RayJobs and records each tick, then asks for a
wake-up at the next one. Time is the context's injected clock.
"""

from __future__ import annotations

import copy
from datetime import datetime

from controllers import constants as C
from controllers.api.cron_schedule import parse_schedule
from controllers.api.job_validation import validate_raycronjob
from controllers.common.events import create_once
from controllers.common.invalid import invalid_report
from controllers.common.last_write import remember_write
from controllers.common.objects import generation_of, spec_of
from controllers.raycronjob.builders import child_rayjob
from controllers.raycronjob.context import CronContext
from controllers.raycronjob.ticks import due_ticks
from kuberay_py.client import Conflict
from kuberay_py.clock import format_rfc3339, parse_rfc3339

__all__ = ["suspended", "tick", "validate"]


def validate(ctx: CronContext) -> bool:
    """True (stop here) for an invalid spec: a Warning once per generation, no requeue."""
    errors = validate_raycronjob(ctx.cron)
    if not errors:
        return False
    if ctx.memo.first_time("invalid", generation_of(ctx.cron)):
        report = invalid_report(C.CRD_RAYCRONJOB, ctx.cron, errors)
        ctx.deps.recorder.event(ctx.cron, C.WARNING, report.reason, report.event)
    return True  # a spec change wakes us


def suspended(ctx: CronContext) -> bool:
    """True (stop here) while ``spec.suspend``: a Normal event once per generation."""
    if not spec_of(ctx.cron).get("suspend"):
        ctx.memo.told = None
        return False
    if ctx.memo.first_time("suspended", generation_of(ctx.cron)):
        ctx.deps.recorder.event(
            ctx.cron,
            C.NORMAL,
            "SuspendedRayCronJob",
            "RayCronJob suspended, no new RayJobs will be created",
        )
    return True


async def tick(ctx: CronContext) -> None:
    """For each due tick (:func:`~.ticks.due_ticks`), earliest first, create ``<cron>-<unixMinutes>``
    (AlreadyExists counts as done) and write ``status.lastScheduleTime``, as KubeRay does one
    reconcile at a time; then wake up at the next tick."""
    spec = spec_of(ctx.cron)
    schedule = parse_schedule(str(spec["schedule"]), spec.get("timeZone"))
    last = parse_rfc3339((ctx.cron.get("status") or {}).get("lastScheduleTime")) or parse_rfc3339(
        ctx.cron["metadata"].get("creationTimestamp")
    )
    now = ctx.deps.clock.utcnow()
    if last is None:
        last = now
    ticks, following = due_ticks(schedule, last, now, ctx.deps.options.missed_ticks)
    for due in ticks:
        await _create_child(ctx, due)
        body = copy.deepcopy(ctx.cron)
        body["status"] = dict(ctx.cron.get("status") or {}) | {"lastScheduleTime": format_rfc3339(due)}
        try:
            written = await ctx.deps.client.update_status(C.RAYCRONJOBS, body)
        except Conflict:
            ctx.requeue.immediately()
            return
        remember_write(ctx.memo, ctx.cron, written)
        ctx.cron = written
    ctx.requeue.at((following - ctx.deps.clock.utcnow()).total_seconds())


async def _create_child(ctx: CronContext, due: datetime) -> None:
    child = child_rayjob(ctx.cron, due)
    ref = f"{ctx.ref.namespace}/{child['metadata']['name']}"
    await create_once(  # None: this tick's child exists, a previous pass created it
        ctx.deps.recorder,
        ctx.cron,
        ctx.deps.client.create(C.RAYJOBS, child, ctx.ref.namespace),
        failed=("FailedToCreateRayJob", f"Failed to create RayJob {ref}: {{error}}"),
        done=("CreatedRayJob", f"Created RayJob {ref}"),
    )
