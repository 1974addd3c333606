"""Missed RayCronJob ticks (``controllers.raycronjob.ticks``) and the child RayJob's spec."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from controllers.api.cron_schedule import parse_schedule
from controllers.raycronjob.builders import child_rayjob
from controllers.raycronjob.ticks import LATEST_ONLY, MAX_PER_PASS, REPLAY_ALL, due_ticks

EVERY_5 = parse_schedule("*/5 * * * *", "UTC")
T0 = datetime(2026, 1, 1, 0, 0, tzinfo=UTC)


def minutes(*values: int) -> list[datetime]:
    return [T0 + timedelta(minutes=m) for m in values]


def test_every_missed_tick_is_due_earliest_first_by_default() -> None:
    ticks, following = due_ticks(EVERY_5, T0, T0 + timedelta(minutes=17))
    assert ticks == minutes(5, 10, 15)
    assert following == T0 + timedelta(minutes=20)


def test_latest_only_runs_the_most_recent_missed_tick() -> None:
    ticks, following = due_ticks(EVERY_5, T0, T0 + timedelta(minutes=17), LATEST_ONLY)
    assert ticks == minutes(15)
    assert following == T0 + timedelta(minutes=20)


def test_nothing_is_due_before_the_next_tick() -> None:
    for policy in (REPLAY_ALL, LATEST_ONLY):
        assert due_ticks(EVERY_5, T0, T0 + timedelta(minutes=4, seconds=59), policy) == (
            [],
            T0 + timedelta(minutes=5),
        )


def test_a_tick_exactly_now_is_due() -> None:
    assert due_ticks(EVERY_5, T0, T0 + timedelta(minutes=5))[0] == minutes(5)


def test_a_long_outage_is_replayed_in_bounded_passes() -> None:
    every_minute = parse_schedule("* * * * *", "UTC")
    now = T0 + timedelta(minutes=2 * MAX_PER_PASS + 3)
    ticks, following = due_ticks(every_minute, T0, now)
    assert ticks == minutes(*range(1, MAX_PER_PASS + 1))
    assert following <= now  # more are due: the caller comes back at once
    rest, _ = due_ticks(every_minute, ticks[-1], now)
    assert rest[0] == T0 + timedelta(minutes=MAX_PER_PASS + 1)


def test_the_child_spec_is_the_template_as_kuberays_go_types_write_it() -> None:
    cron = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {"name": "nightly", "namespace": "ns", "uid": "u1"},
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {
                "entrypoint": "python x.py",
                "rayClusterSpec": {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "h"}]}}}},
            },
        },
    }
    child = child_rayjob(cron, T0)
    assert child["metadata"]["name"] == f"nightly-{int(T0.timestamp()) // 60}"
    head = child["spec"]["rayClusterSpec"]["headGroupSpec"]
    # Go structs: an empty pod-template metadata and container resources; no setDefaults here.
    assert head["template"]["metadata"] == {}
    assert head["template"]["spec"]["containers"][0]["resources"] == {}
    assert "rayStartParams" not in head
    assert "metadata" not in cron["spec"]["jobTemplate"]["rayClusterSpec"]["headGroupSpec"]["template"]
