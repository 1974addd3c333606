"""The RayCronJob controller on a FakeClock: children on schedule, the catch-up on missed ticks
(every one, earliest first, as KubeRay; or only the latest with ``--raycronjob-missed-ticks=latest``),
suspend, invalid specs, and the feature gate (off by default, as in KubeRay)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from controllers.cli.flags import operator_flags, parse_args
from controllers.constants import RAYCRONJOBS, RAYJOBS
from controllers.raycronjob.options import RayCronJobOptions
from kuberay_py.client import Client
from kuberay_py.clock import FakeClock, parse_rfc3339
from kuberay_py.envtest import Environment
from tests.polling import eventually
from tests.raycronjob_harness import cron_operator
from tests.rayjob_harness import rayjob

CRD_DIR = Path(__file__).resolve().parents[2] / "config" / "crd" / "bases"


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def env() -> AsyncIterator[Environment]:
    async with Environment([str(CRD_DIR)]) as e:
        yield e


@pytest_asyncio.fixture(loop_scope="session", params=["all", "latest"])
async def cron_env(
    env: Environment, request: pytest.FixtureRequest
) -> AsyncIterator[tuple[Client, str, FakeClock]]:
    """The controller with each ``--raycronjob-missed-ticks`` policy (``all`` is the default)."""
    clock = FakeClock(wall_start=datetime.now(UTC))
    async with cron_operator(env, clock, RayCronJobOptions(missed_ticks=request.param)) as (client, ns):
        yield client, ns, clock


def cron(name: str, schedule: str, **spec: Any) -> dict[str, Any]:
    template = rayjob("t", submissionMode="HTTPMode")["spec"]
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {"name": name},
        "spec": {"schedule": schedule, "timeZone": "UTC", "jobTemplate": template, **spec},
    }


async def children(client: Client, ns: str, cron_name: str) -> list[dict[str, Any]]:
    items = (await client.list(RAYJOBS, ns, label_selector=f"ray.io/cronjob-name={cron_name}"))["items"]
    return sorted(items, key=lambda j: j["metadata"]["name"])


async def test_children_follow_the_schedule_and_a_resume_catches_up_on_missed_ticks(
    cron_env: tuple[Client, str, FakeClock], request: pytest.FixtureRequest
) -> None:
    client, ns, clock = cron_env
    policy = request.node.callspec.params["cron_env"]
    created = await client.create(RAYCRONJOBS, cron("nightly", "*/5 * * * *"), ns)
    start = parse_rfc3339(created["metadata"]["creationTimestamp"])
    assert start is not None
    assert await children(client, ns, "nightly") == []
    # Step to just after the first tick (a multiple of 5 minutes after creation).
    first = (int(start.timestamp()) // 300 + 1) * 300
    await clock.advance(first - clock.utcnow().timestamp() + 1)

    async def n_children(n: int) -> list[dict[str, Any]] | None:
        kids = await children(client, ns, "nightly")
        return kids if len(kids) == n else None

    (child,) = await eventually(lambda: n_children(1), "first child", 20)
    assert child["metadata"]["name"] == f"nightly-{first // 60}"
    assert child["metadata"]["annotations"]["ray.io/cronjob-scheduled-timestamp"] == datetime.fromtimestamp(
        first, UTC
    ).strftime("%Y-%m-%dT%H:%M:%SZ")
    (ref,) = child["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["controller"]) == ("RayCronJob", "nightly", True)
    assert child["spec"]["submissionMode"] == "HTTPMode"
    await eventually(lambda: _scheduled_at(client, ns, "nightly", first), "lastScheduleTime", 20)
    # Three ticks missed while suspended.
    await client.patch(RAYCRONJOBS, "nightly", {"spec": {"suspend": True}}, ns)
    await eventually(lambda: _event(client, ns, "SuspendedRayCronJob"), "suspended", 20)
    await clock.advance(3 * 300)
    assert len(await children(client, ns, "nightly")) == 1
    await client.patch(RAYCRONJOBS, "nightly", {"spec": {"suspend": False}}, ns)
    missed = [first + 300, first + 600, first + 900]
    if policy == "all":
        # KubeRay's catch-up (the default): one child per missed tick, and lastScheduleTime walks
        # them earliest first to the latest.
        kids = await eventually(lambda: n_children(4), "a child for each missed tick", 20)
        assert [k["metadata"]["name"] for k in kids[1:]] == [f"nightly-{t // 60}" for t in missed]
    else:
        # --raycronjob-missed-ticks=latest: one child, for the latest missed tick only.
        kids = await eventually(lambda: n_children(2), "one catch-up child", 20)
        assert kids[1]["metadata"]["name"] == f"nightly-{missed[-1] // 60}"
    await eventually(lambda: _scheduled_at(client, ns, "nightly", missed[-1]), "lastScheduleTime", 20)


async def _scheduled_at(client: Client, ns: str, name: str, tick: int) -> bool:
    """The status write comes after the child's create: wait for it rather than read it once."""
    status = (await client.get(RAYCRONJOBS, name, ns)).get("status") or {}
    return parse_rfc3339(status.get("lastScheduleTime")) == datetime.fromtimestamp(tick, UTC)


async def _event(client: Client, ns: str, reason: str) -> bool | None:
    items = (await client.request("GET", f"/apis/events.k8s.io/v1/namespaces/{ns}/events"))["items"]
    return True if any(e.get("reason") == reason for e in items) else None


async def test_suspend_and_invalid_specs_create_nothing(cron_env: tuple[Client, str, FakeClock]) -> None:
    client, ns, clock = cron_env
    await client.create(RAYCRONJOBS, cron("held", "* * * * *", suspend=True), ns)
    await client.create(RAYCRONJOBS, cron("bad", "61 * * * *"), ns)

    async def reasons() -> set[str] | None:
        items = (await client.request("GET", f"/apis/events.k8s.io/v1/namespaces/{ns}/events"))["items"]
        found = {e.get("reason") for e in items}
        return found if {"SuspendedRayCronJob", "InvalidRayCronJobSpec"} <= found else None

    await eventually(reasons, "suspended and invalid events", 20)
    await clock.advance(180)
    assert await children(client, ns, "held") == [] and await children(client, ns, "bad") == []


@pytest.mark.parametrize(("argv", "on"), [([], False), (["--feature-gates", "RayCronJob=true"], True)])
def test_the_feature_gate_is_off_by_default(argv: list[str], on: bool) -> None:
    assert operator_flags(parse_args(argv)).feature_gates["RayCronJob"] is on


@pytest.mark.parametrize(
    ("argv", "policy"), [([], "all"), (["--raycronjob-missed-ticks", "latest"], "latest")]
)
def test_missed_ticks_are_replayed_unless_the_flag_says_latest(argv: list[str], policy: str) -> None:
    assert operator_flags(parse_args(argv)).raycronjob_missed_ticks == policy
