"""RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS: a RayJob left Running after Ray's job
ended goes terminal once the grace period after ``rayJobInfo.endTime`` is over (on the injected
clock), and asks to be woken exactly then while it is not."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, cast

import pytest

from controllers.common.scope import Deps
from controllers.rayjob.context import JobContext
from controllers.rayjob.memory import JobMemo
from controllers.rayjob.options import RayJobOptions
from controllers.rayjob.running import GRACE_PERIOD_MESSAGE, GRACE_PERIOD_REASON, transition_grace_period_over
from kuberay_py.clock import FakeClock, format_rfc3339

GRACE = 300.0


def context(clock: FakeClock, job_status: str, ended_ago: float | None) -> JobContext:
    status: dict[str, Any] = {"jobDeploymentStatus": "Running", "jobStatus": job_status}
    if ended_ago is not None:
        status["rayJobInfo"] = {"endTime": format_rfc3339(clock.utcnow() - timedelta(seconds=ended_ago))}
    job = {"metadata": {"name": "j", "namespace": "ns"}, "spec": {}, "status": dict(status)}
    return JobContext(
        deps=Deps(
            cast(Any, None),
            cast(Any, None),
            cast(Any, None),
            clock,
            RayJobOptions(transition_grace_period=GRACE),
        ),
        dashboards=cast(Any, None),
        memo=JobMemo("uid-1"),
        job=job,
        status=status,
    )


@pytest.mark.parametrize(
    ("ray", "state"), [("SUCCEEDED", "Complete"), ("STOPPED", "Complete"), ("FAILED", "Failed")]
)
def test_past_the_grace_period_the_job_goes_terminal_with_kuberays_reason(ray: str, state: str) -> None:
    ctx = context(FakeClock(), ray, ended_ago=GRACE)
    assert transition_grace_period_over(ctx)
    st = ctx.status
    assert (st["jobDeploymentStatus"], st["reason"], st["message"]) == (
        state,
        GRACE_PERIOD_REASON,
        GRACE_PERIOD_MESSAGE,
    )
    assert st["jobStatus"] == ray  # Ray's status is kept as it is


def test_within_the_grace_period_nothing_changes_and_the_wake_up_is_at_its_end() -> None:
    ctx = context(FakeClock(), "SUCCEEDED", ended_ago=GRACE - 40)
    assert not transition_grace_period_over(ctx)
    assert ctx.status["jobDeploymentStatus"] == "Running" and "reason" not in ctx.status
    assert ctx.requeue.delay == 40.0


@pytest.mark.parametrize(
    ("ray", "ended_ago"), [("RUNNING", 10_000.0), ("PENDING", None), ("SUCCEEDED", None)]
)
def test_a_live_job_or_one_without_an_end_time_is_left_alone(ray: str, ended_ago: float | None) -> None:
    ctx = context(FakeClock(), ray, ended_ago)
    assert not transition_grace_period_over(ctx)
    assert ctx.status["jobDeploymentStatus"] == "Running" and ctx.requeue.delay is None


@pytest.mark.parametrize(
    ("raw", "seconds"), [("", 300.0), ("45", 45.0), ("0", 0.0), ("-5", -5.0), ("1.5", 300.0), ("ten", 300.0)]
)
def test_the_env_var_is_parsed_as_kuberays_atoi(
    monkeypatch: pytest.MonkeyPatch, raw: str, seconds: float
) -> None:
    monkeypatch.setenv("RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS", raw)
    assert RayJobOptions.from_env().transition_grace_period == seconds
