"""Which tick is due: KubeRay's next-after-last rule, without its catch-up burst.

KubeRay creates one child for the *earliest* missed tick per pass, so after an outage or a long
suspend the missed ticks are replayed one after another (§7.2, §10.11). A batch/v1 CronJob runs
only the most recent missed one, which is what a user expects: here too, only the latest tick
that is due gets a child; the older missed ones are skipped (docs/differences.md).
"""

from __future__ import annotations

from datetime import datetime

from controllers.api.cron_schedule import CronSchedule

__all__ = ["MAX_MISSED", "due_tick"]

MAX_MISSED = 100_000  # bound on the walk over missed ticks (@every 1s for a day is 86 400)


def due_tick(schedule: CronSchedule, last: datetime, now: datetime) -> tuple[datetime | None, datetime]:
    """(the latest tick in (last, now], or None; the first tick after now)."""
    due: datetime | None = None
    tick = schedule.next_after(last)
    for _ in range(MAX_MISSED):
        if tick > now:
            return due, tick
        due = tick
        tick = schedule.next_after(tick)
    return due, schedule.next_after(now)
