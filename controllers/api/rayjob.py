"""ray.io/v1 RayJob and RayCronJob: spec and status, field for field with KubeRay's CRDs.

Same conventions as ``controllers.api.raycluster``: every field is optional in Python (``None`` =
"not written"), CRD defaults live in ``Schema`` markers (``controllers.api.defaults`` applies
them), and embedded Kubernetes types stay plain dicts so unknown fields survive.

``rayClusterSpec`` is the full RayCluster spec model and ``rayClusterStatus`` the full RayCluster
status model, so the controller copies both without converting. ``submissionMode`` has no enum in
KubeRay's CRD (docs/reference/rayjob.md §1.1); we keep the schema identical, and the semantic validation in
``controllers.api.job_validation`` rejects an unknown mode instead of silently never submitting.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from controllers.api.base import ApiModel, ApiObject, DateTime, Int32, Int64, K8s, Schema, StringMap
from controllers.api.raycluster import MANAGED_BY_RULES, RayClusterSpec, RayClusterStatus

__all__ = [
    "CRON_KIND",
    "DELETION_POLICIES",
    "JOB_DEPLOYMENT_TERMINAL",
    "JOB_STATUS_TERMINAL",
    "KIND",
    "MANAGED_BY_VALUES",
    "SUBMISSION_MODES",
    "DeletionCondition",
    "DeletionPolicy",
    "DeletionRule",
    "DeletionStrategy",
    "RayCronJob",
    "RayCronJobSpec",
    "RayCronJobStatus",
    "RayJob",
    "RayJobInfo",
    "RayJobSpec",
    "RayJobStatus",
    "SubmitterConfig",
    "load_raycronjob",
    "load_rayjob",
]

KIND = "RayJob"
CRON_KIND = "RayCronJob"

MANAGED_BY_VALUES = ("ray.io/kuberay-operator", "kueue.x-k8s.io/multikueue")
SUBMISSION_MODES = ("K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode")
DELETION_POLICIES = ("DeleteCluster", "DeleteWorkers", "DeleteSelf", "DeleteNone")
# Ray's JobStatus.is_terminal() and KubeRay's IsJobDeploymentTerminal (docs/reference/rayjob.md §1.3).
JOB_STATUS_TERMINAL = frozenset({"STOPPED", "SUCCEEDED", "FAILED"})
JOB_DEPLOYMENT_TERMINAL = frozenset({"Complete", "Failed"})

PodTemplateSpec = Annotated[dict[str, Any], K8s("V1PodTemplateSpec")]
PolicyType = Literal["DeleteCluster", "DeleteWorkers", "DeleteSelf", "DeleteNone"]

_CONDITION_RULES = Schema(
    {
        "x-kubernetes-validations": [
            {
                "message": "JobStatus and JobDeploymentStatus cannot be used together within the same "
                "deletion condition.",
                "rule": "!(has(self.jobStatus) && has(self.jobDeploymentStatus))",
            },
            {
                "message": "the deletion condition requires either the JobStatus or the JobDeploymentStatus "
                "field.",
                "rule": "has(self.jobStatus) || has(self.jobDeploymentStatus)",
            },
        ]
    }
)
_STRATEGY_RULES = Schema(
    {
        "x-kubernetes-validations": [
            {
                "message": "legacy policies (onSuccess/onFailure) and deletionRules cannot be used together "
                "within the same deletionStrategy",
                "rule": "!((has(self.onSuccess) || has(self.onFailure)) && has(self.deletionRules))",
            },
            {
                "message": "deletionStrategy requires either BOTH onSuccess and onFailure, OR the "
                "deletionRules field (cannot be empty)",
                "rule": "((has(self.onSuccess) && has(self.onFailure)) || has(self.deletionRules))",
            },
        ]
    }
)


class DeletionPolicy(ApiModel):
    """A legacy ``onSuccess`` / ``onFailure`` policy (deprecated in KubeRay, still served)."""

    policy: PolicyType | None = None


class DeletionCondition(ApiModel):
    """When a rule fires: exactly one of ``jobStatus`` / ``jobDeploymentStatus``, after ``ttlSeconds``."""

    job_deployment_status: Literal["Failed"] | None = None
    job_status: Literal["SUCCEEDED", "FAILED"] | None = None
    ttl_seconds: Annotated[int, Schema({"default": 0, "format": "int32", "minimum": 0})] | None = None


class DeletionRule(ApiModel):
    crd_required: ClassVar[tuple[str, ...]] = ("condition", "policy")

    condition: Annotated[DeletionCondition, _CONDITION_RULES] | None = None
    policy: PolicyType | None = None


class DeletionStrategy(ApiModel):
    deletion_rules: (
        Annotated[list[DeletionRule], Schema({"minItems": 1, "x-kubernetes-list-type": "atomic"})] | None
    ) = Field(default=None, description="Ordered clean-up steps, each after its own TTL from endTime.")
    on_failure: DeletionPolicy | None = None
    on_success: DeletionPolicy | None = None


class SubmitterConfig(ApiModel):
    backoff_limit: Int32 | None = Field(
        default=None, description="backoffLimit of the submitter Job (default 2)."
    )


class RayJobSpec(ApiModel):
    """The desired state of a RayJob. One of ``rayClusterSpec`` / ``clusterSelector`` is needed."""

    active_deadline_seconds: Int32 | None = Field(
        default=None, description="Fail the job this many seconds after status.startTime."
    )
    backoff_limit: Annotated[int, Schema({"default": 0, "format": "int32"})] | None = Field(
        default=None, description="Retries of the whole RayJob, each on a new RayCluster."
    )
    cluster_selector: StringMap | None = Field(
        default=None, description="Run on the existing RayCluster named by ray.io/cluster."
    )
    deletion_strategy: Annotated[DeletionStrategy, _STRATEGY_RULES] | None = None
    entrypoint: str | None = Field(default=None, description="The command the Ray job runs.")
    entrypoint_num_cpus: float | None = None
    entrypoint_num_gpus: float | None = None
    entrypoint_resources: str | None = Field(
        default=None, description="Custom resources for the entrypoint, a JSON object."
    )
    job_id: str | None = Field(default=None, description="The Ray submission id (generated if empty).")
    managed_by: Annotated[str, MANAGED_BY_RULES] | None = Field(
        default=None, description="The controller that reconciles this job; immutable."
    )
    metadata: StringMap | None = Field(default=None, description="Ray job metadata.")
    pre_running_deadline_seconds: Annotated[int, Schema({"format": "int32", "minimum": 1})] | None = Field(
        default=None, description="Fail the job if it is not Running this long after status.startTime."
    )
    ray_cluster_spec: RayClusterSpec | None = Field(
        default=None, description="The RayCluster created for this job."
    )
    runtime_env_yaml: str | None = Field(
        default=None, alias="runtimeEnvYAML", description="The Ray runtime environment (YAML)."
    )
    shutdown_after_job_finishes: bool | None = Field(
        default=None, description="Delete the RayCluster when the job is finished (after the TTL)."
    )
    submission_mode: Annotated[str, Schema({"default": "K8sJobMode"})] | None = Field(
        default=None, description="K8sJobMode, HTTPMode, InteractiveMode or SidecarMode."
    )
    submitter_config: SubmitterConfig | None = None
    submitter_pod_template: PodTemplateSpec | None = Field(
        default=None, description="The submitter Pod (K8sJobMode)."
    )
    suspend: bool | None = Field(default=None, description="Delete the cluster and hold the job while true.")
    ttl_seconds_after_finished: Annotated[int, Schema({"default": 0, "format": "int32"})] | None = Field(
        default=None, description="Seconds after endTime before clean-up."
    )

    def mode(self) -> str:
        return self.submission_mode or "K8sJobMode"

    def selected_cluster(self) -> str | None:
        """The cluster name from ``clusterSelector`` (None when no selector is set)."""
        if self.cluster_selector is None:
            return None
        return self.cluster_selector.get("ray.io/cluster", "")


class RayJobInfo(ApiModel):
    end_time: DateTime | None = None
    start_time: DateTime | None = None


class RayJobStatus(ApiModel):
    """The observed state of a RayJob (docs/reference/rayjob.md §1.3)."""

    dashboard_url: str | None = Field(default=None, alias="dashboardURL")
    end_time: DateTime | None = None
    failed: Annotated[int, Schema({"default": 0, "format": "int32"})] | None = None
    job_deployment_status: str | None = None
    job_id: str | None = None
    job_status: str | None = None
    job_status_check_failure_start_time: DateTime | None = None
    message: str | None = None
    observed_generation: Int64 | None = None
    ray_cluster_name: str | None = None
    ray_cluster_status: RayClusterStatus | None = None
    ray_job_info: RayJobInfo | None = None
    reason: str | None = None
    start_time: DateTime | None = None
    succeeded: Annotated[int, Schema({"default": 0, "format": "int32"})] | None = None


class RayJob(ApiObject):
    spec: RayJobSpec | None = None
    status: RayJobStatus | None = None


class RayCronJobSpec(ApiModel):
    crd_required: ClassVar[tuple[str, ...]] = ("jobTemplate", "schedule")

    job_template: RayJobSpec | None = Field(default=None, description="The spec of each child RayJob.")
    schedule: str | None = Field(default=None, description="A standard 5-field cron schedule.")
    suspend: bool | None = Field(default=None, description="Create no new RayJobs while true.")
    time_zone: Annotated[str, Schema({"minLength": 1})] | None = Field(
        default=None, description="IANA time zone of the schedule (default: the operator's)."
    )


class RayCronJobStatus(ApiModel):
    last_schedule_time: DateTime | None = None


class RayCronJob(ApiObject):
    spec: RayCronJobSpec | None = None
    status: RayCronJobStatus | None = None


def load_rayjob(obj: dict[str, Any]) -> RayJob:
    """Load a RayJob manifest. Raises ``pydantic.ValidationError`` naming the bad field."""
    return RayJob.model_validate(obj)


def load_raycronjob(obj: dict[str, Any]) -> RayCronJob:
    return RayCronJob.model_validate(obj)
