"""Which ticks are due: KubeRay's next-after-last rule, replaying every missed tick by default.

KubeRay v1.7 schedules ``Next(lastScheduleTime or creationTimestamp)`` when it is not in the
future, one child per reconcile, and its own status write wakes the next reconcile: after an
operator outage or a long suspend every missed tick gets its child, earliest first (KubeRay's
unit test ``TestRayCronJobReconcile_CreateRayJob`` pins ``lastScheduleTime = Next(last)``). It has
no ``startingDeadlineSeconds`` and no ``concurrencyPolicy``. That is the default here
(:data:`REPLAY_ALL`); we replay the same ticks in one pass, bounded per pass.

:data:`LATEST_ONLY` (``--raycronjob-missed-ticks=latest``) keeps the batch/v1 CronJob habit of
running only the most recent missed tick and skipping the older ones (docs/differences.md).
"""

from __future__ import annotations

from datetime import datetime
from typing import Final, Literal

from controllers.api.cron_schedule import CronSchedule

__all__ = ["LATEST_ONLY", "MAX_MISSED", "MAX_PER_PASS", "REPLAY_ALL", "MissedTicks", "due_ticks"]

MissedTicks = Literal["all", "latest"]
REPLAY_ALL: Final = "all"
LATEST_ONLY: Final = "latest"

MAX_MISSED = 100_000  # bound on the walk over missed ticks (@every 1s for a day is 86 400)
MAX_PER_PASS = 50  # children created in one reconcile before yielding the worker


def due_ticks(
    schedule: CronSchedule, last: datetime, now: datetime, policy: MissedTicks = REPLAY_ALL
) -> tuple[list[datetime], datetime]:
    """(ticks in (last, now] to run now, earliest first; the tick to wake up for next).

    Under :data:`REPLAY_ALL` at most :data:`MAX_PER_PASS` ticks are returned; the wake-up tick is
    then already due, which tells the caller to come back at once for the rest.
    """
    if policy == LATEST_ONLY:
        return _latest(schedule, last, now)
    ticks: list[datetime] = []
    tick = schedule.next_after(last)
    while tick <= now and len(ticks) < MAX_PER_PASS:
        ticks.append(tick)
        tick = schedule.next_after(tick)
    return ticks, tick


def _latest(schedule: CronSchedule, last: datetime, now: datetime) -> tuple[list[datetime], datetime]:
    due: datetime | None = None
    tick = schedule.next_after(last)
    for _ in range(MAX_MISSED):
        if tick > now:
            return ([due] if due is not None else []), tick
        due = tick
        tick = schedule.next_after(tick)
    return ([due] if due is not None else []), schedule.next_after(now)
