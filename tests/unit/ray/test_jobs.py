"""The dashboard job client (controllers.ray.jobs) against raysim's job API, on a FakeClock.

The server is the fake head's real aiohttp app pieces (JobTable + add_job_routes), so this pins
both sides: Ray's status progression, messages, 404s and duplicate ids, and the client's typed
answers, timeouts and auth header.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web

from controllers.ray.dashboard import DashboardClientFactory, DashboardHTTPError, DashboardTimeout
from controllers.ray.jobs import JobAlreadySubmitted, JobSubmission, RayJobs
from controllers.raysim.job_api import add_job_routes
from controllers.raysim.jobs import JobTable, parse_entrypoint
from controllers.raysim.submitter import parse_submitter
from kuberay_py.clock import FakeClock

TOKEN = "s3cret"


class Head:
    def __init__(self, clock: FakeClock) -> None:
        self.table = JobTable(clock)
        self.hang = False
        self.release = asyncio.Event()
        self.seen_auth: list[str | None] = []

    async def gate(self, request: web.Request) -> web.Response | None:
        self.seen_auth.append(request.headers.get("x-ray-authorization"))
        if request.headers.get("x-ray-authorization") != f"Bearer {TOKEN}":
            return web.Response(status=401, text="Unauthorized")
        if self.hang:
            await self.release.wait()
        return None


@pytest_asyncio.fixture
async def head() -> AsyncIterator[tuple[Head, FakeClock, RayJobs, DashboardClientFactory]]:
    clock = FakeClock()
    head = Head(clock)
    app = web.Application()
    add_job_routes(app, head.table, head.gate)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    factory = DashboardClientFactory(timeout=0.5)
    jobs = RayJobs(factory.client(f"http://127.0.0.1:{port}", auth_token=TOKEN))
    try:
        yield head, clock, jobs, factory
    finally:
        head.release.set()
        await factory.close()
        await runner.cleanup()


async def test_submit_then_status_follows_the_entrypoint(
    head: tuple[Head, FakeClock, RayJobs, DashboardClientFactory],
) -> None:
    server, clock, jobs, _ = head
    sub = JobSubmission(
        entrypoint="echo hi && sleep 10 && exit 3", submission_id="job-a", metadata={"k": "v"}
    )
    assert await jobs.submit(sub) == "job-a"
    info = await jobs.get("job-a")
    assert info is not None and info.status == "PENDING" and info.start_time == 0
    await clock.advance(1)
    info = await jobs.get("job-a")
    assert info is not None and info.status == "RUNNING" and info.start_time > 0 and info.end_time == 0
    assert info.metadata == {"k": "v"}
    assert await jobs.logs("job-a") == "hi\n"
    await clock.advance(10)
    info = await jobs.get("job-a")
    assert info is not None and info.status == "FAILED" and info.terminal and info.end_time > info.start_time
    assert "exit code 3" in info.message
    assert server.table.submissions == 1
    assert all(a == f"Bearer {TOKEN}" for a in server.seen_auth)


async def test_duplicate_submission_is_typed_and_not_counted(
    head: tuple[Head, FakeClock, RayJobs, DashboardClientFactory],
) -> None:
    server, _, jobs, _ = head
    await jobs.submit(JobSubmission(entrypoint="true", submission_id="dup"))
    with pytest.raises(JobAlreadySubmitted, match="already used"):
        await jobs.submit(JobSubmission(entrypoint="true", submission_id="dup"))
    assert server.table.submissions == 1


async def test_unknown_job_is_none_and_stop_delete_follow_ray(
    head: tuple[Head, FakeClock, RayJobs, DashboardClientFactory],
) -> None:
    _, clock, jobs, _ = head
    assert await jobs.get("nope") is None
    assert await jobs.logs("nope") is None
    assert await jobs.stop("nope") is False
    await jobs.submit(JobSubmission(entrypoint="sleep 100", submission_id="long"))
    await clock.advance(1)
    with pytest.raises(DashboardHTTPError) as exc:
        await jobs.delete("long")  # Ray refuses to delete a running job
    assert exc.value.status == 400
    assert await jobs.stop("long") is True
    info = await jobs.get("long")
    assert info is not None and info.status == "STOPPED"
    assert await jobs.stop("long") is False  # already terminal: not an error
    assert await jobs.delete("long") is True
    assert await jobs.get("long") is None
    assert [j.submission_id for j in await jobs.list()] == []


async def test_a_hung_dashboard_times_out(
    head: tuple[Head, FakeClock, RayJobs, DashboardClientFactory],
) -> None:
    server, _, jobs, _ = head
    server.hang = True
    with pytest.raises(DashboardTimeout):
        await jobs.get("x")


async def test_missing_token_is_401(head: tuple[Head, FakeClock, RayJobs, DashboardClientFactory]) -> None:
    _, _, jobs, factory = head
    bare = RayJobs(factory.client(jobs.dashboard.base_url))
    with pytest.raises(DashboardHTTPError) as exc:
        await bare.get("x")
    assert exc.value.status == 401


async def test_log_tail_websocket_closes_when_the_job_ends(
    head: tuple[Head, FakeClock, RayJobs, DashboardClientFactory],
) -> None:
    _, clock, jobs, _ = head
    await jobs.submit(JobSubmission(entrypoint="echo one && sleep 5 && echo two", submission_id="tail"))
    got: list[str] = []
    async with aiohttp.ClientSession(headers={"x-ray-authorization": f"Bearer {TOKEN}"}) as session:
        async with session.ws_connect(f"{jobs.dashboard.base_url}/api/jobs/tail/logs/tail") as ws:
            await clock.advance(1)
            got.append((await ws.receive()).data)
            await clock.advance(5)
            async for msg in ws:
                got.append(msg.data)
    assert "".join(got).splitlines() == ["one", "two", "raysim: entrypoint exited with code 0"]


def test_entrypoint_convention() -> None:
    assert parse_entrypoint("python /home/ray/samples/sample_code.py").exit_code == 0
    plan = parse_entrypoint("sleep 2; echo done && sleep 1.5 && false")
    assert (plan.run_seconds, plan.exit_code, plan.logs) == (3.5, 1, ((2.0, "done"),))


def test_submitter_script_is_read_like_bash() -> None:
    address = "rj-abcde-head-svc.default.svc.cluster.local:8265"
    url = f"http://{address}"
    health = (
        f"import urllib.request; r=urllib.request.urlopen('{url}/api/gcs_healthz', timeout=10); "
        "exit(0 if b'success' in r.read() else 1)"
    )
    script_text = " ".join(
        [
            f'until python -c "{health}" >/dev/null 2>&1 ;',
            'do echo "Waiting ..." ; sleep 2 ; done ;',
            f"if ! ray job status --address {url} rj-x >/dev/null 2>&1 ; then",
            f"ray job submit --address {url} --no-wait",
            '--runtime-env-json "{\\"pip\\":[\\"requests\\"]}" --submission-id rj-x',
            "--entrypoint-num-cpus 1.000000 -- python -c 'print(1)' && sleep 1 ;",
            f"fi ; ray job logs --address {url} --follow rj-x",
        ]
    )
    pod = {
        "spec": {
            "containers": [
                {"name": "ray-job-submitter", "command": ["/bin/bash", "-ce", "--"], "args": [script_text]}
            ]
        }
    }
    script = parse_submitter(pod)
    assert script is not None
    assert (script.guard, script.submit, script.no_wait, script.follow) == (True, True, True, True)
    assert script.address == f"http://{address}" and script.submission_id == "rj-x"
    assert script.body == {
        "entrypoint": "python -c 'print(1)' && sleep 1",
        "submission_id": "rj-x",
        "runtime_env": {"pip": ["requests"]},
        "entrypoint_num_cpus": 1.0,
    }
