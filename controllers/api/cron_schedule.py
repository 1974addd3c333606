"""RayCronJob schedules: parse once, then ask for the next tick after an instant.

KubeRay parses ``spec.schedule`` with robfig/cron's ``ParseStandard``: five fields, the
``@yearly``/``@monthly``/``@weekly``/``@daily``/``@hourly`` descriptors, and ``@every <Go
duration>``. croniter does the field arithmetic and the time-zone walk (DST gaps and repeats);
this module narrows what croniter accepts to that grammar (croniter also takes a sixth seconds
field, which KubeRay would reject) and adds ``@every``.

Ticks are timezone-aware datetimes; an unset ``timeZone`` means the operator process's local
zone, as in KubeRay.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from controllers.api.names import parse_go_duration

__all__ = ["CronSchedule", "ScheduleError", "parse_schedule", "parse_time_zone"]

_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


class ScheduleError(ValueError):
    """The schedule or the time zone cannot be used; the message says why, ``field`` says which."""

    def __init__(self, message: str, field: str = "schedule") -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class CronSchedule:
    """A parsed schedule: a 5-field expression, or a fixed ``@every`` interval."""

    expression: str | None
    every: timedelta | None
    zone: tzinfo

    def next_after(self, instant: datetime) -> datetime:
        """The first tick strictly after ``instant`` (aware), in UTC."""
        local = instant.astimezone(self.zone)
        if self.every is not None:
            # robfig's ConstantDelaySchedule: instant + delay, rounded down to the second.
            step = max(self.every, timedelta(seconds=1))
            return (instant + step).replace(microsecond=0).astimezone(UTC)
        assert self.expression is not None
        nxt: datetime = croniter(self.expression, local).get_next(datetime)
        return nxt.astimezone(UTC)


def parse_time_zone(name: str | None) -> tzinfo:
    if name is None:
        local = datetime.now().astimezone().tzinfo
        return local if local is not None else UTC
    if name == "":
        raise ScheduleError(
            "timeZone must not be empty string, omit the field to use the local time zone of the "
            "KubeRay operator",
            "timeZone",
        )
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ScheduleError(f"invalid time zone: unknown time zone {name}", "timeZone") from exc


def parse_schedule(schedule: str, time_zone: str | None = None) -> CronSchedule:
    """Parse ``spec.schedule`` / ``spec.timeZone``; raises ScheduleError with KubeRay's wording."""
    if "TZ" in schedule:
        raise ScheduleError("cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
    zone = parse_time_zone(time_zone)
    text = schedule.strip()
    if text.startswith("@every "):
        try:
            seconds = parse_go_duration(text.removeprefix("@every ").strip())
        except ValueError as exc:
            raise ScheduleError(f"invalid cron schedule: failed to parse duration {text}: {exc}") from exc
        if seconds <= 0:
            raise ScheduleError(f"invalid cron schedule: @every needs a positive duration: {text}")
        return CronSchedule(None, timedelta(seconds=seconds), zone)
    if text.startswith("@"):
        if text not in _DESCRIPTORS:
            raise ScheduleError(f"invalid cron schedule: unrecognized descriptor: {text}")
        text = _DESCRIPTORS[text]
    fields = text.split()
    if len(fields) != 5:
        raise ScheduleError(f"invalid cron schedule: expected exactly 5 fields, found {len(fields)}: {text}")
    if not croniter.is_valid(text):
        raise ScheduleError(f"invalid cron schedule: cannot parse {schedule!r}")
    return CronSchedule(text, None, zone)
