"""The RayCronJob reconciler: create the due ticks' child RayJobs, remember the last.

KubeRay's rules: docs/reference/rayjob.md §7.2. Load (gone → :meth:`Memory.forget`; our own
newer write while the cache lags), build a :class:`CronContext`, then the phases of
``schedule.py`` in order: ``validate`` (Warning ``InvalidRayCronJobSpec`` once per generation; no
requeue, a spec change wakes us), ``suspended`` (Normal ``SuspendedRayCronJob`` once), ``tick``
(each due child, ``status.lastScheduleTime``, a wake-up at the next tick).
"""

from __future__ import annotations

from controllers import constants as C
from controllers.common.cache import CacheReader
from controllers.common.events import Recorder
from controllers.common.last_write import latest
from controllers.raycronjob import schedule
from controllers.raycronjob.context import CronContext
from controllers.raycronjob.memory import Memory
from controllers.raycronjob.options import RayCronJobOptions
from kuberay_py.client import Client
from kuberay_py.clock import Clock, RealClock
from kuberay_py.controller import Request, Result

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
        memo = self.memory.memo(key, str(cached["metadata"].get("uid") or ""))
        cron = latest(memo, cached)
        ctx = CronContext(
            self.client, self.cache, self.recorder, self.clock, self.options, self.memory, memo, cron
        )
        if schedule.validate(ctx) or schedule.suspended(ctx):
            return Result()
        await schedule.tick(ctx)
        return ctx.requeue.result()
