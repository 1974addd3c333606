"""Mirrors of KubeRay v1.7.0 ``e2eraycronjob/raycronjob_test.go``: TestRayCronJobSuspend and
TestRayCronJobNoDuplicateRayJob.

The RayCronJob controller runs in a manager on a FakeClock, so "every minute" is stepped rather
than waited for; Go's ``Consistently`` (every 5 s) becomes a check after each 5 s step. Only
the controller under test runs: both tests count the child RayJobs, not what the children do.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest_asyncio

from controllers.constants import RAYCRONJOBS, RAYJOBS
from kuberay_py.client import Client
from kuberay_py.clock import FakeClock, parse_rfc3339
from kuberay_py.envtest import Environment
from tests.raycronjob_harness import cron_operator
from tests.rayjob_harness import CRD_DIR

from .conftest import eventually, ray_cluster_spec

Cron = tuple[Client, str, FakeClock]


@pytest_asyncio.fixture(loop_scope="session")
async def cron() -> AsyncIterator[Cron]:
    async with Environment([str(CRD_DIR)]) as env:
        clock = FakeClock(wall_start=datetime.now(UTC))
        async with cron_operator(env, clock) as (client, ns):
            yield client, ns, clock


def cron_template(name: str, schedule: str, **spec: Any) -> dict[str, Any]:
    """rayCronJobACTemplate: ``sleep 1`` on KubeRay's e2e cluster spec."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCronJob",
        "metadata": {"name": name},
        "spec": {
            "schedule": schedule,
            "jobTemplate": {"entrypoint": "sleep 1", "rayClusterSpec": ray_cluster_spec()},
            **spec,
        },
    }


async def owned_by(client: Client, ns: str, uid: str) -> int:
    """countRayJobsOwnedByUID."""
    items = (await client.list(RAYJOBS, ns))["items"]
    return sum(
        1 for j in items if any(r.get("uid") == uid for r in j["metadata"].get("ownerReferences") or [])
    )


async def _to_next_minute(clock: FakeClock, created: dict[str, Any]) -> None:
    """Step to one second past the first ``*/1`` tick after the object's creation."""
    start = parse_rfc3339(created["metadata"]["creationTimestamp"])
    assert start is not None
    first = (int(start.timestamp()) // 60 + 1) * 60
    await clock.advance(first - clock.utcnow().timestamp() + 1)


async def test_ray_cron_job_suspend__ray_cron_job_respects_suspend_flag_across_schedule_and_resumes_job_creation(  # noqa: E501
    cron: Cron,
) -> None:
    """raycronjob_test.go:TestRayCronJobSuspend/"RayCronJob respects suspend flag across schedule
    and resumes job creation."."""
    client, ns, clock = cron
    created = await client.create(
        RAYCRONJOBS, cron_template("suspended-raycronjob", "*/1 * * * *", suspend=True), ns
    )
    uid = created["metadata"]["uid"]
    for _ in range(130 // 5):
        await clock.advance(5)
        assert await owned_by(client, ns, uid) == 0
    await client.patch(RAYCRONJOBS, "suspended-raycronjob", {"spec": {"suspend": False}}, ns)
    assert not (await client.get(RAYCRONJOBS, "suspended-raycronjob", ns))["spec"]["suspend"]

    async def some() -> bool:
        return await owned_by(client, ns, uid) > 0

    await eventually(some, "a RayJob after the resume", 20)
    await client.delete(RAYCRONJOBS, "suspended-raycronjob", ns)


async def test_ray_cron_job_no_duplicate_ray_job__ray_cron_job_should_not_create_duplicate_ray_jobs_for_the_same_schedule_tick(  # noqa: E501
    cron: Cron,
) -> None:
    """raycronjob_test.go:TestRayCronJobNoDuplicateRayJob/"RayCronJob should not create duplicate
    RayJobs for the same schedule tick."."""
    client, ns, clock = cron
    created = await client.create(RAYCRONJOBS, cron_template("no-duplicate-raycronjob", "*/1 * * * *"), ns)
    uid = created["metadata"]["uid"]
    await _to_next_minute(clock, created)

    async def some() -> bool:
        return await owned_by(client, ns, uid) > 0

    await eventually(some, "the first tick's RayJob", 20)
    for _ in range(30 // 5):
        await clock.advance(5)
        assert await owned_by(client, ns, uid) <= 1
    await client.delete(RAYCRONJOBS, "no-duplicate-raycronjob", ns)
