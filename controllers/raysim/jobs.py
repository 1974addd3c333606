"""Ray jobs on a fake head: the job table behind the dashboard's ``/api/jobs/`` REST API.

A submitted job goes PENDING → RUNNING → SUCCEEDED / FAILED (or STOPPED when stopped), on the
injected clock, with driver logs. What the job *does* is read from its entrypoint, with a small
convention that real shells also understand, so a test entrypoint means the same thing on a real
Ray cluster:

- the entrypoint is split into commands on ``&&`` and ``;``;
- ``sleep N`` keeps the job RUNNING N more seconds;
- ``echo WORDS`` writes a log line at that moment;
- ``exit N`` ends the job with exit code N (``false`` is ``exit 1``, ``true`` is ``exit 0``);
- anything else (``python my_job.py``) runs instantly and succeeds, with a log line saying so.

So ``sleep 5 && exit 1`` fails after 5 s and ``python train.py`` (every KubeRay sample) succeeds.
A job waits ``pending_seconds`` (default 0.5 s: the driver being scheduled) before RUNNING.

State is computed from the clock when asked (no timers): advance a FakeClock and the next GET
sees the new status. A new head (GCS restart) starts with an empty table, as Ray without GCS
fault tolerance does. Messages follow Ray 2.60's wording.
"""

from __future__ import annotations

import asyncio
import shlex
from dataclasses import dataclass, field
from typing import Any

from kuberay_py.clock import Clock

__all__ = ["JobTable", "SimJob", "parse_entrypoint"]


@dataclass(frozen=True)
class _Plan:
    run_seconds: float
    exit_code: int
    logs: tuple[tuple[float, str], ...]  # (offset from RUNNING, line)


def _commands(entrypoint: str) -> list[list[str]]:
    """The entrypoint's top-level commands (split on ``&&`` / ``;`` outside quotes)."""
    lexer = shlex.shlex(entrypoint, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        tokens = entrypoint.split()
    out: list[list[str]] = [[]]
    for tok in tokens:
        if tok in (";", "&&", "\n"):
            out.append([])
        else:
            out[-1].append(tok)
    return [words for words in out if words]


def parse_entrypoint(entrypoint: str) -> _Plan:
    """What the fake driver does for ``entrypoint`` (see the module docstring)."""
    at = 0.0
    logs: list[tuple[float, str]] = []
    for words in _commands(entrypoint):
        cmd, args = words[0], words[1:]
        if cmd == "sleep":
            try:
                at += max(0.0, float(args[0]))
            except (IndexError, ValueError):
                pass
        elif cmd == "echo":
            logs.append((at, " ".join(args)))
        elif cmd in ("exit", "false", "true"):
            code = 1 if cmd == "false" else 0
            if cmd == "exit" and args:
                try:
                    code = int(args[0])
                except ValueError:
                    code = 2
            return _Plan(at, code, tuple(logs))
        else:
            logs.append((at, f"raysim: ran {shlex.join(words)[:200]}"))
    return _Plan(at, 0, tuple(logs))


@dataclass
class SimJob:
    submission_id: str
    entrypoint: str
    submitted_at: float  # clock.now()
    submitted_wall: float  # epoch seconds
    pending_seconds: float
    plan: _Plan
    metadata: dict[str, str] = field(default_factory=dict)
    runtime_env: dict[str, Any] = field(default_factory=dict)
    entrypoint_num_cpus: float = 0.0
    entrypoint_num_gpus: float = 0.0
    entrypoint_resources: dict[str, float] = field(default_factory=dict)
    stopped_at: float | None = None
    driver_job_id: str = ""

    def _started(self) -> float:
        return self.submitted_at + self.pending_seconds

    def _finished(self) -> float:
        return self._started() + self.plan.run_seconds

    def status(self, now: float) -> str:
        if self.stopped_at is not None and self.stopped_at < self._finished():
            return "STOPPED"
        if now < self._started():
            return "PENDING"
        if now < self._finished():
            return "RUNNING"
        return "SUCCEEDED" if self.plan.exit_code == 0 else "FAILED"

    def end_offset(self, now: float) -> float | None:
        """Seconds from submission to the end, once the job has ended."""
        status = self.status(now)
        if status == "STOPPED":
            assert self.stopped_at is not None
            return self.stopped_at - self.submitted_at
        if status in ("SUCCEEDED", "FAILED"):
            return self._finished() - self.submitted_at
        return None

    def next_change(self, now: float) -> float | None:
        """The next clock instant at which status or logs change by themselves (None: never)."""
        if self.status(now) in ("STOPPED", "SUCCEEDED", "FAILED"):
            return None
        times = [self._started(), self._finished()] + [self._started() + o for o, _ in self.plan.logs]
        later = [t for t in times if t > now]
        return min(later) if later else now

    def logs(self, now: float) -> str:
        horizon = min(now, self.stopped_at if self.stopped_at is not None else now)
        lines = [line for offset, line in self.plan.logs if self._started() + offset <= horizon]
        status = self.status(now)
        if status in ("SUCCEEDED", "FAILED"):
            lines.append(f"raysim: entrypoint exited with code {self.plan.exit_code}")
        return "".join(f"{line}\n" for line in lines)

    def message(self, now: float) -> str:
        status = self.status(now)
        if status == "PENDING":
            return (
                "Job has not started yet. It may be waiting for resources (CPUs, GPUs, memory) to "
                "become available."
            )
        if status == "RUNNING":
            return "Job is currently running."
        if status == "STOPPED":
            return "Job was intentionally stopped."
        if status == "SUCCEEDED":
            return "Job finished successfully."
        tail = self.logs(now).strip().splitlines()[-3:]
        return (
            f"Job entrypoint command failed with exit code {self.plan.exit_code}, last available logs "
            f"(truncated to 20,000 chars):\n" + "\n".join(tail)
        )

    def to_api(self, now: float) -> dict[str, Any]:
        """The JobDetails document Ray's ``GET /api/jobs/<id>`` answers with."""
        status = self.status(now)
        start_ms = 0
        if status != "PENDING":
            start_ms = int((self.submitted_wall + self.pending_seconds) * 1000)
        end = self.end_offset(now)
        return {
            "type": "SUBMISSION",
            "job_id": None if status == "PENDING" else self.driver_job_id,
            "submission_id": self.submission_id,
            "driver_info": None,
            "status": status,
            "entrypoint": self.entrypoint,
            "message": self.message(now),
            "error_type": "JOB_ENTRYPOINT_COMMAND_ERROR" if status == "FAILED" else None,
            "start_time": start_ms,
            "end_time": 0 if end is None else int((self.submitted_wall + end) * 1000),
            "metadata": self.metadata,
            "runtime_env": self.runtime_env,
            "driver_agent_http_address": None,
            "driver_node_id": None,
            "driver_exit_code": self.plan.exit_code if status in ("SUCCEEDED", "FAILED") else None,
            "entrypoint_num_cpus": self.entrypoint_num_cpus,
            "entrypoint_num_gpus": self.entrypoint_num_gpus,
            "entrypoint_memory": 0,
            "entrypoint_resources": self.entrypoint_resources or None,
        }


class JobTable:
    """The head's jobs by submission id. ``submissions`` counts accepted submits (tests assert
    that a retried submitter never submits twice)."""

    def __init__(self, clock: Clock, *, pending_seconds: float = 0.5) -> None:
        self.clock = clock
        self.pending_seconds = pending_seconds
        self.jobs: dict[str, SimJob] = {}
        self.submissions = 0
        # The next this-many ``/logs/tail`` streams close abnormally (1011) at once, as a dropped
        # WebSocket does: what makes ``ray job logs --follow`` exit 1 while the job runs on.
        self.log_stream_drops = 0
        self._counter = 0
        self.changed = asyncio.Event()  # replaced (after being set) on every stop, delete, reset

    def _notify(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    def reset(self) -> None:
        self.jobs.clear()
        self._notify()

    def submit(self, body: dict[str, Any]) -> SimJob:
        """Add a job from a ``POST /api/jobs/`` body; raises ValueError with Ray's messages."""
        entrypoint = body.get("entrypoint")
        if not isinstance(entrypoint, str) or not entrypoint.strip():
            raise ValueError("entrypoint must be a non-empty string")
        submission_id = body.get("submission_id") or body.get("job_id")
        if not submission_id:
            self._counter += 1
            submission_id = f"raysubmit_sim{self._counter:012d}"
        if submission_id in self.jobs:
            raise ValueError(
                f"Job with submission_id {submission_id} already exists. "
                "Please use a different submission_id."
            )
        job = SimJob(
            submission_id=str(submission_id),
            entrypoint=entrypoint,
            submitted_at=self.clock.now(),
            submitted_wall=self.clock.utcnow().timestamp(),
            pending_seconds=self.pending_seconds,
            plan=parse_entrypoint(entrypoint),
            metadata=dict(body.get("metadata") or {}),
            runtime_env=dict(body.get("runtime_env") or {}),
            entrypoint_num_cpus=float(body.get("entrypoint_num_cpus") or 0),
            entrypoint_num_gpus=float(body.get("entrypoint_num_gpus") or 0),
            entrypoint_resources=dict(body.get("entrypoint_resources") or {}),
        )
        self.submissions += 1
        job.driver_job_id = f"{self.submissions:02x}000000"  # Ray's JobID hex form
        self.jobs[job.submission_id] = job
        return job

    def stop(self, submission_id: str) -> bool:
        job = self.jobs[submission_id]
        now = self.clock.now()
        if job.status(now) in ("STOPPED", "SUCCEEDED", "FAILED"):
            return False
        job.stopped_at = now
        self._notify()
        return True

    def delete(self, submission_id: str) -> None:
        """Forget a finished job; raises ValueError for one still running (Ray's rule)."""
        job = self.jobs[submission_id]
        status = job.status(self.clock.now())
        if status not in ("STOPPED", "SUCCEEDED", "FAILED"):
            raise ValueError(
                f"Attempted to delete job '{submission_id}', but it is in a non-terminal state {status}."
            )
        del self.jobs[submission_id]
        self._notify()
