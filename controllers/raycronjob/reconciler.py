"""The RayCronJob reconciler (RAYJOB.md §7.2): create the due tick's child RayJob, remember the tick.

Phases: load (gone → :meth:`Memory.forget`); validate (Warning ``InvalidRayCronJobSpec`` once per
generation; no requeue, a spec change wakes us); suspended (Normal ``SuspendedRayCronJob`` once);
then the tick: if one is due, create ``<cron>-<unixMinutes>`` (AlreadyExists counts as done) and
write ``status.lastScheduleTime``; requeue at the next tick. Time is the injected clock.
"""

from __future__ import annotations

import copy

from controllers import constants as C
from controllers.api.cron_schedule import parse_schedule
from controllers.api.job_validation import validate_raycronjob
from controllers.common.cache import CacheReader
from controllers.common.events import Recorder, write_with_events
from controllers.raycronjob.builders import child_rayjob
from controllers.raycronjob.memory import Memory
from controllers.raycronjob.ticks import due_tick
from kuberay_py.client import AlreadyExists, Client, Conflict
from kuberay_py.clock import Clock, RealClock, format_rfc3339, parse_rfc3339
from kuberay_py.controller import Request, Result

__all__ = ["RayCronJobReconciler"]


class RayCronJobReconciler:
    def __init__(
        self, client: Client, cache: CacheReader, recorder: Recorder, *, clock: Clock | None = None
    ) -> None:
        self.client = client
        self.cache = cache
        self.recorder = recorder
        self.clock = clock or RealClock()
        self.memory = Memory()

    async def reconcile(self, request: Request) -> Result:
        key = f"{request.namespace}/{request.name}"
        cron = self.cache.get(C.RAYCRONJOBS, request.name, request.namespace)
        if cron is None:
            self.memory.forget(key)
            return Result()
        generation = int(cron["metadata"].get("generation") or 0)
        errors = validate_raycronjob(cron)
        if errors:
            if self.memory.first_time(key, "invalid", generation):
                message = "\n".join(str(e) for e in errors)
                self.recorder.event(cron, C.WARNING, "InvalidRayCronJobSpec", f"{key}: {message}")
            return Result()
        spec = cron.get("spec") or {}
        if spec.get("suspend"):
            if self.memory.first_time(key, "suspended", generation):
                self.recorder.event(
                    cron,
                    C.NORMAL,
                    "SuspendedRayCronJob",
                    "RayCronJob suspended, no new RayJobs will be created",
                )
            return Result()
        self.memory.clear(key)
        schedule = parse_schedule(str(spec["schedule"]), spec.get("timeZone"))
        status = cron.get("status") or {}
        last = parse_rfc3339(status.get("lastScheduleTime")) or parse_rfc3339(
            cron["metadata"].get("creationTimestamp")
        )
        now = self.clock.utcnow()
        if last is None:
            last = now
        due, following = due_tick(schedule, last, now)
        if due is not None:
            child = child_rayjob(cron, due)
            ref = f"{request.namespace}/{child['metadata']['name']}"
            try:
                await write_with_events(
                    self.recorder,
                    cron,
                    self.client.create(C.RAYJOBS, child, request.namespace),
                    failed=("FailedToCreateRayJob", f"Failed to create RayJob {ref}: {{error}}"),
                    done=("CreatedRayJob", f"Created RayJob {ref}"),
                    expected=(AlreadyExists,),
                )
            except AlreadyExists:
                pass
            body = copy.deepcopy(cron)
            body["status"] = dict(status) | {"lastScheduleTime": format_rfc3339(due)}
            try:
                await self.client.update_status(C.RAYCRONJOBS, body)
            except Conflict:
                return Result(requeue=True)
        return Result(requeue_after=max(0.001, (following - self.clock.utcnow()).total_seconds()))
