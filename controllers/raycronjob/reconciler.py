"""The RayCronJob reconciler (RAYJOB.md §7.2): create the due ticks' child RayJobs, remember the last.

Phases: load (gone → :meth:`Memory.forget`); validate (Warning ``InvalidRayCronJobSpec`` once per
generation; no requeue, a spec change wakes us); suspended (Normal ``SuspendedRayCronJob`` once);
then the ticks (:func:`~.ticks.due_ticks`): for each due tick, earliest first, create
``<cron>-<unixMinutes>`` (AlreadyExists counts as done) and write ``status.lastScheduleTime``, as
KubeRay does one reconcile at a time; requeue at the next tick. Time is the injected clock.
"""

from __future__ import annotations

import copy
from datetime import datetime

from controllers import constants as C
from controllers.api.cron_schedule import parse_schedule
from controllers.api.job_validation import validate_raycronjob
from controllers.common.cache import CacheReader
from controllers.common.events import Recorder, write_with_events
from controllers.common.invalid import invalid_reason
from controllers.raycronjob.builders import child_rayjob
from controllers.raycronjob.memory import Memory
from controllers.raycronjob.options import RayCronJobOptions
from controllers.raycronjob.ticks import due_ticks
from kuberay_py.client import AlreadyExists, Client, Conflict
from kuberay_py.clock import Clock, RealClock, format_rfc3339, parse_rfc3339
from kuberay_py.controller import Request, Result
from kuberay_py.objects import Obj

__all__ = ["RayCronJobReconciler"]


class RayCronJobReconciler:
    def __init__(
        self,
        client: Client,
        cache: CacheReader,
        recorder: Recorder,
        *,
        clock: Clock | None = None,
        options: RayCronJobOptions | None = None,
    ) -> None:
        self.client = client
        self.cache = cache
        self.recorder = recorder
        self.clock = clock or RealClock()
        self.options = options or RayCronJobOptions()
        self.memory = Memory()

    async def reconcile(self, request: Request) -> Result:
        key = f"{request.namespace}/{request.name}"
        cached = self.cache.get(C.RAYCRONJOBS, request.name, request.namespace)
        if cached is None:
            self.memory.forget(key)
            return Result()
        cron = self.memory.latest(key, cached)
        generation = int(cron["metadata"].get("generation") or 0)
        errors = validate_raycronjob(cron)
        if errors:
            if self.memory.first_time(key, "invalid", generation):
                message = "\n".join(str(e) for e in errors)
                reason = invalid_reason("RayCronJob", errors, ("spec",))
                self.recorder.event(cron, C.WARNING, reason, f"{key}: {message}")
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
        last = parse_rfc3339((cron.get("status") or {}).get("lastScheduleTime")) or parse_rfc3339(
            cron["metadata"].get("creationTimestamp")
        )
        now = self.clock.utcnow()
        if last is None:
            last = now
        ticks, following = due_ticks(schedule, last, now, self.options.missed_ticks)
        for tick in ticks:
            await self._create_child(cron, tick)
            body = copy.deepcopy(cron)
            body["status"] = dict(cron.get("status") or {}) | {"lastScheduleTime": format_rfc3339(tick)}
            try:
                written = await self.client.update_status(C.RAYCRONJOBS, body)
            except Conflict:
                return Result(requeue=True)
            self.memory.wrote(key, cron, written)
            cron = written
        return Result(requeue_after=max(0.001, (following - self.clock.utcnow()).total_seconds()))

    async def _create_child(self, cron: Obj, tick: datetime) -> None:
        child = child_rayjob(cron, tick)
        namespace = cron["metadata"]["namespace"]
        ref = f"{namespace}/{child['metadata']['name']}"
        try:
            await write_with_events(
                self.recorder,
                cron,
                self.client.create(C.RAYJOBS, child, namespace),
                failed=("FailedToCreateRayJob", f"Failed to create RayJob {ref}: {{error}}"),
                done=("CreatedRayJob", f"Created RayJob {ref}"),
                expected=(AlreadyExists,),
            )
        except AlreadyExists:
            pass  # this tick's child exists: a previous pass created it
