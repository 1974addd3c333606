"""The simulator's batch/v1 Job controller against the envtest API server.

Pods "exit" through a PodRuntime with ``wait_exit`` (codes scripted per Job); assertions read the
Job's status and its Pods from the API server. Time is a FakeClock (activeDeadlineSeconds).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio

from kuberay_py.client import Client, resources
from kuberay_py.clock import FakeClock
from kuberay_py.envtest import Environment
from tests.integration.test_simulator import wait_for, wait_gone
from tests.sim_harness import running_simulator


class ExitRuntime:
    """Each start of a Job's Pod takes the next exit code scripted for that Job (None: runs on)."""

    def __init__(self) -> None:
        self.codes: dict[str, list[int | None]] = {}
        self._pending: dict[str, asyncio.Future[int | None]] = {}

    async def start(self, pod: dict[str, Any], ip: str) -> None:
        job = (pod["metadata"].get("labels") or {}).get("batch.kubernetes.io/job-name", "")
        script = self.codes.get(job) or [None]
        code = script.pop(0) if len(script) > 1 else script[0]
        fut: asyncio.Future[int | None] = asyncio.get_running_loop().create_future()
        if code is not None:
            fut.set_result(code)
        self._pending[pod["metadata"]["uid"]] = fut

    async def stop(self, pod: dict[str, Any], ip: str) -> None:
        fut = self._pending.pop(pod["metadata"]["uid"], None)
        if fut is not None and not fut.done():
            fut.set_result(None)

    async def wait_exit(self, pod: dict[str, Any], ip: str) -> int | None:
        fut = self._pending.get(pod["metadata"]["uid"])
        return None if fut is None else await fut


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def env() -> AsyncIterator[Environment]:
    async with Environment() as e:
        yield e


@pytest_asyncio.fixture(loop_scope="session")
async def sim(env: Environment) -> AsyncIterator[tuple[ExitRuntime, FakeClock, Client, str]]:
    clock = FakeClock()
    runtime = ExitRuntime()
    async with running_simulator(env, pod_runtime=runtime, clock=clock, job_backoff_scale=0.0):
        client = env.new_client()
        ns = await env.create_namespace()
        try:
            yield runtime, clock, client, ns
        finally:
            await env.delete_namespace(ns)
            await client.close()


def job(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]},
            },
            **spec,
        },
    }


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == type_), None)


async def test_a_failed_pod_is_retried_and_the_job_completes(
    sim: tuple[ExitRuntime, FakeClock, Client, str],
) -> None:
    runtime, _, client, ns = sim
    runtime.codes["retry"] = [1, 0]
    await client.create(resources.JOBS, job("retry", backoffLimit=2), ns)
    done = await wait_for(client, resources.JOBS, ns, lambda j: condition(j, "Complete") is not None)
    status = done["status"]
    assert (status["succeeded"], status["failed"]) == (1, 1)
    assert condition(done, "SuccessCriteriaMet") is not None and status.get("completionTime")
    assert condition(done, "Complete")["reason"] == "CompletionsReached"  # type: ignore[index]
    pods = (await client.list(resources.PODS, ns, label_selector="batch.kubernetes.io/job-name=retry"))[
        "items"
    ]
    assert sorted(p["status"]["phase"] for p in pods) == ["Failed", "Succeeded"]
    for pod in pods:
        assert pod["metadata"]["name"].startswith("retry-")
        assert pod["metadata"]["labels"]["app"] == "retry"
        (ref,) = pod["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["name"], ref["controller"]) == ("Job", "retry", True)


async def test_backoff_limit_exceeded_fails_the_job(sim: tuple[ExitRuntime, FakeClock, Client, str]) -> None:
    runtime, _, client, ns = sim
    runtime.codes["doomed"] = [2]
    await client.create(resources.JOBS, job("doomed", backoffLimit=1), ns)
    failed = await wait_for(client, resources.JOBS, ns, lambda j: condition(j, "Failed") is not None)
    assert failed["status"]["failed"] == 2 and "succeeded" not in failed["status"]
    cond = condition(failed, "Failed")
    assert cond is not None and cond["reason"] == "BackoffLimitExceeded"
    assert cond["message"] == "Job has reached the specified backoff limit"
    assert condition(failed, "FailureTarget") is not None
    assert "completionTime" not in failed["status"]


async def test_active_deadline_deletes_the_pod_and_fails_the_job(
    sim: tuple[ExitRuntime, FakeClock, Client, str],
) -> None:
    _, clock, client, ns = sim
    await client.create(resources.JOBS, job("slow", activeDeadlineSeconds=30), ns)
    await wait_for(client, resources.JOBS, ns, lambda j: (j.get("status") or {}).get("active") == 1)
    await wait_for(
        client,
        resources.PODS,
        ns,
        lambda p: p["status"].get("phase") == "Running",
        label_selector="job-name=slow",
    )
    assert condition(await client.get(resources.JOBS, "slow", ns), "Failed") is None
    (pod,) = (await client.list(resources.PODS, ns, label_selector="job-name=slow"))["items"]
    await clock.advance(31)
    failed = await wait_for(client, resources.JOBS, ns, lambda j: condition(j, "Failed") is not None)
    assert condition(failed, "Failed")["reason"] == "DeadlineExceeded"  # type: ignore[index]
    await wait_gone(client, resources.PODS, pod["metadata"]["name"], ns)
