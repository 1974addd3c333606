"""Each RayCronJob phase on an explicit CronContext over fakes (as for the other controllers)."""

from __future__ import annotations

import copy
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import yaml

from controllers import constants as C
from controllers.common.scope import Deps
from controllers.raycronjob import schedule
from controllers.raycronjob.context import CronContext
from controllers.raycronjob.memory import Memory
from controllers.raycronjob.options import RayCronJobOptions
from kuberay_py.client import Client
from kuberay_py.clock import FakeClock, format_rfc3339
from kuberay_py.controller import Result
from kuberay_py.objects import Obj
from tests.unit.fakes import Events, FakeCache, RecordingClient

SAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "kuberay" / "samples" / "ray-cronjob.sample.yaml"


class Kit:
    def __init__(self, **spec: Any) -> None:
        self.cache, self.client, self.events, self.clock = (
            FakeCache(),
            RecordingClient(),
            Events(),
            FakeClock(),
        )
        self.memory = Memory()
        cron: Obj = copy.deepcopy(
            next(d for d in yaml.safe_load_all(SAMPLE.read_text()) if d["kind"] == "RayCronJob")
        )
        created = format_rfc3339(self.clock.utcnow() - timedelta(seconds=90))
        meta = {"name": "cron", "namespace": "ns", "uid": "cron-uid", "generation": 1}
        cron["metadata"] = {**meta, "creationTimestamp": created}
        cron["spec"].update(spec)
        self.cron = cron

    def ctx(self) -> CronContext:
        client = cast(Client, self.client)
        memo = self.memory.memos.get("ns/cron", "cron-uid")
        deps = Deps(client, self.cache, self.events, self.clock, RayCronJobOptions())
        return CronContext(deps, memo, self.cron)


def test_an_invalid_spec_is_announced_once_per_generation() -> None:
    kit = Kit(schedule="not a schedule")
    assert schedule.validate(kit.ctx()) and schedule.validate(kit.ctx())
    assert kit.events.reasons() == ["InvalidRayCronJobSpec"]
    kit.cron["metadata"]["generation"] = 2
    assert schedule.validate(kit.ctx())
    assert kit.events.reasons() == ["InvalidRayCronJobSpec"] * 2


def test_suspended_is_announced_once_and_creates_nothing() -> None:
    kit = Kit(suspend=True)
    assert not schedule.validate(kit.ctx())
    assert schedule.suspended(kit.ctx()) and schedule.suspended(kit.ctx())
    assert kit.events.reasons() == ["SuspendedRayCronJob"] and kit.client.requests == []


async def test_a_due_tick_creates_its_child_records_the_tick_and_wakes_at_the_next() -> None:
    kit = Kit()  # "* * * * *": the last tick ran a minute before this minute's, which is due
    now = kit.clock.utcnow()
    this_minute = now.replace(second=0, microsecond=0)
    kit.cron["status"] = {"lastScheduleTime": format_rfc3339(this_minute - timedelta(minutes=1))}
    ctx = kit.ctx()
    await schedule.tick(ctx)
    (create, status) = kit.client.requests
    assert create[:2] == ("create", "RayJob") and status[:2] == ("update_status", "RayCronJob")
    child = kit.client.stored[("RayJob", create[2])]
    assert child["metadata"]["labels"] == {C.RAY_CRONJOB_NAME_LABEL_KEY: "cron"}
    assert child["metadata"]["ownerReferences"][0]["name"] == "cron"
    assert (
        kit.client.last_status["lastScheduleTime"]
        == child["metadata"]["annotations"][C.RAY_CRONJOB_TIMESTAMP_ANNOTATION_KEY]
    )
    result = ctx.requeue.result()
    assert result.requeue_after is not None and 0 < result.requeue_after <= 60
    assert kit.events.reasons() == ["CreatedRayJob"]


async def test_no_tick_due_only_sets_the_timer() -> None:
    kit = Kit()
    kit.cron["status"] = {"lastScheduleTime": format_rfc3339(kit.clock.utcnow())}
    ctx = kit.ctx()
    await schedule.tick(ctx)
    assert kit.client.requests == [] and ctx.requeue.result() != Result()
