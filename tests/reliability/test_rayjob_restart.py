"""A RayJob survives SIGKILLs of the operator at random moments of its life.

A real ``kuberay-operator run`` process is killed (no drain, nothing flushed) several times while
the RayJob goes New → Initializing → Running → Complete, and restarted each time. Whatever the
moment, the Ray job is submitted exactly once (the fake heads count accepted submissions) and
exactly one RayCluster is ever created, and none is left after ``shutdownAfterJobFinishes``.
The kill moments (a stage, then a seeded random delay; printed on failure) replay.
"""

from __future__ import annotations

import asyncio
import random

import pytest

from controllers.constants import RAYCLUSTERS, RAYJOBS
from tests.rayjob_harness import rayjob

from .conftest import OperatorFactory, Rig, eventually


async def _creates(rig: Rig, resource: str) -> int:
    return sum(
        1
        for r in await rig.env.request_log.records()
        if r.verb == "create" and r.resource == resource and r.namespace == rig.namespace and r.status < 300
    )


@pytest.mark.parametrize(("mode", "seed"), [("K8sJobMode", 7), ("HTTPMode", 11)])
async def test_sigkill_at_random_moments_never_submits_twice_nor_leaks_a_cluster(
    rig: Rig, operator_processes: OperatorFactory, mode: str, seed: int
) -> None:
    rng = random.Random(seed)
    ns = rig.namespace
    await rig.env.request_log.clear()
    doc = rayjob("victim", "sleep 8", submissionMode=mode, shutdownAfterJobFinishes=True)
    await rig.client.create(RAYJOBS, doc, ns)
    kills: list[tuple[str, float, str]] = []
    # Each kill waits for a stage of the job's life, then a random extra moment within it.
    for stage in ("Initializing", "Running", "Running"):
        proc = operator_processes(rig)

        async def reached(stage: str = stage) -> str | None:
            job = await rig.client.get(RAYJOBS, "victim", ns)
            state = str((job.get("status") or {}).get("jobDeploymentStatus") or "")
            return state if state in (stage, "Complete") else None

        await eventually(reached, f"the RayJob {stage}", 60)
        jitter = rng.uniform(0.0, 1.0)
        await asyncio.sleep(jitter)
        state = ((await rig.client.get(RAYJOBS, "victim", ns)).get("status") or {}).get("jobDeploymentStatus")
        proc.kill9()
        kills.append((stage, round(jitter, 2), str(state)))
    proc = operator_processes(rig)

    async def complete() -> dict[str, object] | None:
        job = await rig.client.get(RAYJOBS, "victim", ns)
        return job if (job.get("status") or {}).get("jobDeploymentStatus") == "Complete" else None

    try:
        job = await eventually(complete, "the RayJob Complete after the kills", 90)
    except AssertionError:
        raise AssertionError(f"kills {kills}; operator log:\n{proc.output()}") from None
    status = job["status"]
    assert status["jobStatus"] == "SUCCEEDED" and status["succeeded"] == 1, (kills, status)
    submissions = sum(c.jobs.submissions for c in rig.runtime.history if c.namespace == ns)
    assert submissions == 1, f"kills {kills}: the Ray job was submitted {submissions} times"
    assert await _creates(rig, "rayclusters.ray.io") == 1, (
        f"kills {kills}: more than one RayCluster was created"
    )

    async def no_cluster() -> bool | None:
        return True if not (await rig.client.list(RAYCLUSTERS, ns))["items"] else None

    await eventually(no_cluster, "the RayCluster deleted after the job", 60)
