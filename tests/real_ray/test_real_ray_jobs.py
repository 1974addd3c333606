"""The operator's job client (``controllers/ray/jobs.py``) against a real Ray 2.60 dashboard.

The simulator's fake head answers the job API as Ray does; this tier checks that claim on the
real thing: one ``ray start --head`` for the module, submissions built the way the RayJob
controller builds them in HTTPMode (``builders.submission_body``: entrypoint, submission id,
runtime env from ``runtimeEnvYAML``, metadata), status polls to each terminal state, logs, stop,
delete, and the 404 answers the client turns into ``None`` / ``False``. KubeRay's e2erayjob tests
pin these through the ``ray job`` CLI in a submitter Pod, which the simulator only imitates, so
the K8sJobMode submitter line the controller writes is also run here, with the real CLI.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from controllers.ray.dashboard import DashboardClientFactory
from controllers.ray.jobs import JobAlreadySubmitted, JobInfo, JobSubmission, RayJobs
from controllers.rayjob import builders

from .conftest import RAY_PORTS, RealRayHeadRuntime, ray_available

pytestmark = pytest.mark.real_ray

# Bound on a real driver starting and finishing on a loaded 2-core machine (not a speed target).
JOB_WAIT = 120.0


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def ray_jobs() -> AsyncIterator[RayJobs]:
    reason = ray_available()
    if reason:
        pytest.skip(reason)
    head = RealRayHeadRuntime()
    # A longer per-call bound than the operator's 2 s: the first calls start Ray's job agent.
    factory = DashboardClientFactory(timeout=30.0)
    try:
        await head.start_head()
        yield RayJobs(factory.client(f"http://127.0.0.1:{RAY_PORTS['dashboard']}"))
    finally:
        await factory.close()
        await head.stop_head()
        await head.shutdown()


def rayjob_submission(name: str, job_id: str, entrypoint: str, **spec: Any) -> JobSubmission:
    """What the RayJob controller POSTs in HTTPMode for this RayJob."""
    job = {
        "metadata": {"name": name},
        "spec": {"entrypoint": entrypoint, "submissionMode": "HTTPMode", **spec},
    }
    body = builders.submission_body(job, job_id)
    return JobSubmission(
        entrypoint=body["entrypoint"],
        submission_id=job_id,
        runtime_env=body.get("runtime_env"),
        metadata=body.get("metadata"),
    )


async def until_status(jobs: RayJobs, job_id: str, *statuses: str) -> JobInfo:
    deadline = asyncio.get_running_loop().time() + JOB_WAIT
    info = await jobs.get(job_id)
    while info is None or info.status not in statuses:
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{job_id} never reached {statuses}; last: {info}")
        await asyncio.sleep(0.5)
        info = await jobs.get(job_id)
    return info


async def test_a_submitted_job_succeeds_with_its_runtime_env_metadata_and_logs(ray_jobs: RayJobs) -> None:
    jobs = ray_jobs
    submission = rayjob_submission(
        "hello",
        "hello-x7k2p",
        "python -c \"import os; print('hello from', os.environ['GREETING'])\"",
        runtimeEnvYAML="env_vars:\n  GREETING: kuberay-py\n",
        metadata={"owner": "e2e"},
    )
    assert await jobs.submit(submission) == "hello-x7k2p"
    info = await until_status(jobs, "hello-x7k2p", "SUCCEEDED", "FAILED")
    assert info.status == "SUCCEEDED", info.message
    assert info.terminal and info.submission_id == "hello-x7k2p"
    assert info.entrypoint == submission.entrypoint
    assert info.metadata.get("owner") == "e2e"
    assert info.runtime_env.get("env_vars") == {"GREETING": "kuberay-py"}
    assert 0 < info.start_time <= info.end_time
    logs = await jobs.logs("hello-x7k2p")
    assert logs is not None and "hello from kuberay-py" in logs
    assert "hello-x7k2p" in [j.submission_id for j in await jobs.list()]
    # HTTPMode retries submit with the same id: Ray refuses, the client says so by type.
    with pytest.raises(JobAlreadySubmitted):
        await jobs.submit(submission)
    # Deleting a finished job forgets it.
    assert await jobs.delete("hello-x7k2p") is True
    assert await jobs.get("hello-x7k2p") is None


async def test_a_long_running_job_is_stopped(ray_jobs: RayJobs) -> None:
    jobs = ray_jobs
    await jobs.submit(rayjob_submission("long", "long-4m9qz", 'python -c "import time; time.sleep(600)"'))
    await until_status(jobs, "long-4m9qz", "RUNNING")
    assert await jobs.stop("long-4m9qz") is True
    stopped = await until_status(jobs, "long-4m9qz", "STOPPED")
    assert stopped.terminal
    assert await jobs.stop("long-4m9qz") is False  # already over: nothing to stop


async def test_a_failing_job_reports_its_exit_code_and_output(ray_jobs: RayJobs) -> None:
    jobs = ray_jobs
    await jobs.submit(
        rayjob_submission(
            "fail", "fail-8s2dd", "python -c \"import sys; print('seriously wrong'); sys.exit(3)\""
        )
    )
    info = await until_status(jobs, "fail-8s2dd", "FAILED", "SUCCEEDED")
    assert info.status == "FAILED"
    assert "exit code 3" in info.message and "seriously wrong" in info.message
    assert info.error_type == "JOB_ENTRYPOINT_COMMAND_ERROR"


async def test_an_unknown_job_is_an_answer_not_an_error(ray_jobs: RayJobs) -> None:
    jobs = ray_jobs
    assert await jobs.get("never-submitted") is None
    assert await jobs.logs("never-submitted") is None
    assert await jobs.stop("never-submitted") is False
    assert await jobs.delete("never-submitted") is False


async def run_submitter(line: str) -> tuple[int, str]:
    """The K8sJobMode submitter container's ``/bin/bash -ce -- <line>``, with this venv's ``ray``
    and ``python`` first on PATH (the image's, in a real Pod)."""
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }
    proc = await asyncio.create_subprocess_exec(
        "/bin/bash",
        "-ce",
        "--",
        line,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), JOB_WAIT)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    return int(proc.returncode or 0), out.decode(errors="replace")


async def test_the_submitter_script_runs_with_the_real_ray_cli_and_a_retry_never_resubmits(
    ray_jobs: RayJobs,
) -> None:
    """The submitter line the RayJob controller writes (``builders.submitter_words``: health wait,
    ``ray job status`` guard, ``submit --no-wait`` with the runtime env and metadata as JSON,
    ``logs --follow``) parsed and run by the real Ray CLI; a second run, as a retried submitter
    Pod does, finds the job and only follows its logs."""
    jobs = ray_jobs
    job = {
        "metadata": {"name": "script", "namespace": "ns"},
        "spec": {
            "entrypoint": "python -c \"import os; print('from the submitter', os.environ['TEAM'])\"",
            "runtimeEnvYAML": "env_vars:\n  TEAM: kuberay-py\n",
            "metadata": {"team": "e2e"},
        },
    }
    line = " ".join(builders.submitter_words(job, f"127.0.0.1:{RAY_PORTS['dashboard']}", "script-9xk2d"))
    code, out = await run_submitter(line)
    assert code == 0, out
    assert "submitted successfully" in out and "from the submitter kuberay-py" in out
    info = await until_status(jobs, "script-9xk2d", "SUCCEEDED", "FAILED")
    assert info.status == "SUCCEEDED", info.message
    assert info.metadata.get("team") == "e2e"
    assert info.runtime_env.get("env_vars") == {"TEAM": "kuberay-py"}
    code, again = await run_submitter(line)
    assert code == 0, again
    assert "submitted successfully" not in again
    assert "from the submitter kuberay-py" in again
    assert [j.submission_id for j in await jobs.list()].count("script-9xk2d") == 1
