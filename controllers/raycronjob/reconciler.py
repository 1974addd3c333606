"""The RayCronJob reconciler: create the due ticks' child RayJobs, remember the last.

KubeRay's rules: docs/reference/rayjob.md §7.2. Load (gone → :meth:`Memory.forget`; our own
newer write while the cache lags), build a :class:`CronContext`, then the phases of
``schedule.py`` in order: ``validate`` (Warning ``InvalidRayCronJobSpec`` once per generation; no
requeue, a spec change wakes us), ``suspended`` (Normal ``SuspendedRayCronJob`` once), ``tick``
(each due child, ``status.lastScheduleTime``, a wake-up at the next tick).
"""

from __future__ import annotations

from controllers import constants as C
from controllers.common.last_write import load
from controllers.common.scope import Deps
from controllers.raycronjob import schedule
from controllers.raycronjob.context import CronContext
from controllers.raycronjob.memory import Memory
from controllers.raycronjob.options import RayCronJobOptions
from kuberay_py.controller import Request, Result

__all__ = ["RayCronJobReconciler"]


class RayCronJobReconciler:
    def __init__(self, deps: Deps[RayCronJobOptions]) -> None:
        self.deps = deps
        self.memory = Memory()

    async def reconcile(self, request: Request) -> Result:
        cached = self.deps.cache.get(C.RAYCRONJOBS, request.name, request.namespace)
        loaded = load(cached, request, self.memory)
        if loaded is None:
            return Result()
        cron, memo = loaded
        ctx = CronContext(self.deps, memo, cron)
        if schedule.validate(ctx) or schedule.suspended(ctx):
            return Result()
        await schedule.tick(ctx)
        return ctx.requeue.result()
