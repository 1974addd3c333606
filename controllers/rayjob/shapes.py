"""The RayJob's status as the controller reads and writes it: KubeRay's field names and values.

``RayJobStatus`` is the raw ``status`` dict (a TypedDict: the cache and the API hand out dicts);
``JobDeploymentStatus`` is the operator's state machine (``rayjob_types.go`` in KubeRay v1.7.0,
plus the ``""`` of a job not yet started), ``JobStatus`` what Ray's job API reports for the
submission. Closed sets as ``Literal``s, so a typo in a state is a type error, not a job stuck in
a state no phase serves.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

__all__ = [
    "FINISHED_JOB_STATUSES",
    "TERMINAL_DEPLOYMENT_STATUSES",
    "JobDeploymentStatus",
    "JobStatus",
    "RayJobStatus",
]

JobDeploymentStatus = Literal[
    "",
    "New",
    "Initializing",
    "Waiting",
    "Running",
    "Suspending",
    "Suspended",
    "Retrying",
    "Complete",
    "Failed",
    "ValidationFailed",
]
JobStatus = Literal["", "PENDING", "RUNNING", "STOPPED", "SUCCEEDED", "FAILED"]

TERMINAL_DEPLOYMENT_STATUSES: tuple[JobDeploymentStatus, ...] = ("Complete", "Failed")
FINISHED_JOB_STATUSES: tuple[JobStatus, ...] = ("STOPPED", "SUCCEEDED", "FAILED")  # Ray's terminal ones


class RayJobStatus(TypedDict, total=False):
    dashboardURL: str
    endTime: str
    failed: int
    jobDeploymentStatus: JobDeploymentStatus
    jobId: str
    jobStatus: JobStatus
    jobStatusCheckFailureStartTime: str
    message: str
    observedGeneration: int
    rayClusterName: str
    rayClusterStatus: dict[str, Any]
    rayJobInfo: dict[str, Any]
    reason: str
    startTime: str
    succeeded: int
