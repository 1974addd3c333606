"""The Ray dashboard's job REST API (``/api/jobs/``), over the same client as the Serve calls.

Same guarantees as :mod:`controllers.ray.dashboard`: the factory's pooled session, a hard total
timeout per call (2 s by default, KubeRay's), a cap on the body read, the ``x-ray-authorization``
header when the cluster uses token auth, and typed errors. What this module adds is the job
vocabulary: a 404 on a job is an answer (``None``), not an error; a submission whose id Ray has
already seen raises :class:`JobAlreadySubmitted`, which a caller submitting with a fixed
``submission_id`` treats as success (that is what makes HTTPMode's retries safe).

Example::

    jobs = RayJobs(factory.client("http://10.0.0.5:8265", auth_token=token))
    await jobs.submit(JobSubmission(entrypoint="python job.py", submission_id="rayjob-x7k2p"))
    info = await jobs.get("rayjob-x7k2p")   # JobInfo, or None if the cluster never heard of it
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from controllers.ray.dashboard import (
    DashboardClient,
    DashboardError,
    DashboardHTTPError,
    DashboardInvalidResponse,
)

__all__ = [
    "JOBS_PATH",
    "TERMINAL_JOB_STATUSES",
    "JobAlreadySubmitted",
    "JobInfo",
    "JobSubmission",
    "RayJobs",
]

JOBS_PATH = "/api/jobs/"
TERMINAL_JOB_STATUSES = frozenset({"STOPPED", "SUCCEEDED", "FAILED"})
DUPLICATE_ID_MARKER = "Please use a different submission_id"


class JobAlreadySubmitted(DashboardError):
    """Ray already has a job with this submission id (KubeRay: "submission ID ... already used")."""


@dataclass(frozen=True)
class JobInfo:
    """What ``GET /api/jobs/<id>`` says; times are Ray's epoch milliseconds (0 = not yet)."""

    submission_id: str
    status: str
    message: str = ""
    entrypoint: str = ""
    job_id: str | None = None
    error_type: str | None = None
    start_time: int = 0
    end_time: int = 0
    metadata: dict[str, str] = field(default_factory=dict)
    runtime_env: dict[str, Any] = field(default_factory=dict)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_JOB_STATUSES

    @classmethod
    def from_api(cls, doc: Any, url: str) -> JobInfo:
        if not isinstance(doc, dict) or not isinstance(doc.get("status"), str):
            raise DashboardInvalidResponse(f"unexpected job document: {str(doc)[:200]}", url)
        return cls(
            submission_id=str(doc.get("submission_id") or doc.get("job_id") or ""),
            status=doc["status"],
            message=str(doc.get("message") or ""),
            entrypoint=str(doc.get("entrypoint") or ""),
            job_id=doc.get("job_id"),
            error_type=doc.get("error_type"),
            start_time=int(doc.get("start_time") or 0),
            end_time=int(doc.get("end_time") or 0),
            metadata=dict(doc.get("metadata") or {}),
            runtime_env=dict(doc.get("runtime_env") or {}),
        )


@dataclass(frozen=True)
class JobSubmission:
    """The body of ``POST /api/jobs/``; empty optional fields are left out, as KubeRay does."""

    entrypoint: str
    submission_id: str | None = None
    runtime_env: dict[str, Any] | None = None
    metadata: dict[str, str] | None = None
    entrypoint_num_cpus: float = 0.0
    entrypoint_num_gpus: float = 0.0
    entrypoint_resources: dict[str, float] | None = None

    def to_api(self) -> dict[str, Any]:
        body: dict[str, Any] = {"entrypoint": self.entrypoint}
        if self.submission_id:
            body["submission_id"] = self.submission_id
        if self.metadata:
            body["metadata"] = self.metadata
        if self.runtime_env:
            body["runtime_env"] = self.runtime_env
        if self.entrypoint_num_cpus > 0:
            body["entrypoint_num_cpus"] = self.entrypoint_num_cpus
        if self.entrypoint_num_gpus > 0:
            body["entrypoint_num_gpus"] = self.entrypoint_num_gpus
        if self.entrypoint_resources:
            body["entrypoint_resources"] = self.entrypoint_resources
        return body


def _decode(body: bytes, url: str) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise DashboardInvalidResponse(f"not JSON: {body[:200]!r}", url) from exc


class RayJobs:
    """The job calls of one dashboard. Cheap to create around a :class:`DashboardClient`."""

    def __init__(self, dashboard: DashboardClient) -> None:
        self.dashboard = dashboard

    def _url(self, job_id: str = "", suffix: str = "") -> str:
        return f"{self.dashboard.base_url}{JOBS_PATH}{job_id}{suffix}"

    async def _unless_404(self, method: str, url: str, data: bytes | None = None) -> bytes | None:
        """The body, or None when the dashboard answers 404 (no such job)."""
        try:
            return await self.dashboard.request(method, url, data=data)
        except DashboardHTTPError as exc:
            if exc.status == 404:
                return None
            raise

    async def get(self, job_id: str) -> JobInfo | None:
        """``GET /api/jobs/<id>``; ``None`` when the cluster has no such job (404)."""
        url = self._url(job_id)
        body = await self._unless_404("GET", url)
        return None if body is None else JobInfo.from_api(_decode(body, url), url)

    async def list(self) -> list[JobInfo]:
        url = self._url()
        doc = _decode(await self.dashboard.request("GET", url), url)
        if not isinstance(doc, list):
            raise DashboardInvalidResponse("job list is not an array", url)
        return [JobInfo.from_api(item, url) for item in doc]

    async def submit(self, submission: JobSubmission) -> str:
        """``POST /api/jobs/``; returns the submission id Ray answered with.

        Raises :class:`JobAlreadySubmitted` when Ray already has ``submission_id`` (Ray answers 400
        or, in older releases, 500 with "Please use a different submission_id").
        """
        url = self._url()
        try:
            body = await self.dashboard.request("POST", url, data=orjson.dumps(submission.to_api()))
        except DashboardHTTPError as exc:
            if DUPLICATE_ID_MARKER in exc.body:
                raise JobAlreadySubmitted(
                    f"submission ID '{submission.submission_id}' already used, {DUPLICATE_ID_MARKER}", url
                ) from exc
            raise
        doc = _decode(body, url)
        if not isinstance(doc, dict):
            raise DashboardInvalidResponse("submit answer is not an object", url)
        return str(doc.get("submission_id") or doc.get("job_id") or submission.submission_id or "")

    async def stop(self, job_id: str) -> bool:
        """``POST /api/jobs/<id>/stop``. True if Ray stopped it; False if it had already finished
        (or never existed). Raises when Ray refused to stop a job that is still running."""
        url = self._url(job_id, "/stop")
        body = await self._unless_404("POST", url, data=b"")
        if body is None:
            return False
        doc = _decode(body, url)
        if isinstance(doc, dict) and doc.get("stopped"):
            return True
        info = await self.get(job_id)
        if info is None or info.terminal:
            return False
        raise DashboardError(f"failed to stop job: {info.status} {info.message}", url)

    async def delete(self, job_id: str) -> bool:
        """``DELETE /api/jobs/<id>``: forget a finished job. False when there was none."""
        url = self._url(job_id)
        body = await self._unless_404("DELETE", url)
        if body is None:
            return False
        doc = _decode(body, url) if body else {}
        return bool(isinstance(doc, dict) and doc.get("deleted", True))

    async def logs(self, job_id: str) -> str | None:
        """``GET /api/jobs/<id>/logs`` → the driver's output so far; ``None`` for an unknown job."""
        url = self._url(job_id, "/logs")
        body = await self._unless_404("GET", url)
        if body is None:
            return None
        doc = _decode(body, url)
        if not isinstance(doc, dict):
            raise DashboardInvalidResponse("logs answer is not an object", url)
        return str(doc.get("logs") or "")
