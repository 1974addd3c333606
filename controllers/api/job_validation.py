"""Semantic validation of RayJob and RayCronJob: KubeRay's rules plus ours.

KubeRay's are summarised in docs/reference/rayjob.md §1.5 and §7.2.

Same contract as ``controllers.api.validation``: pure functions returning every ``FieldError``
(KubeRay stops at the first), with KubeRay's message wording behind a field path, and a category
that picks the event reason (``InvalidRayJobMetadata`` / ``InvalidRayJobSpec`` /
``InvalidRayJobStatus``).

Our additions, each in docs/differences.md: an unknown ``submissionMode`` is rejected (KubeRay has
no enum and such a job silently never submits); ``entrypointResources`` must be a JSON object of
numbers at validation time (KubeRay finds out at submit time); and a ``metadata`` field with an
explicit ``rayVersion`` below 2.6.0 is a validation error rather than a reconcile error.
"""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import yaml

from controllers.api.cron_schedule import ScheduleError, parse_schedule
from controllers.api.errors import FieldError
from controllers.api.gates import ClusterGates
from controllers.api.names import object_name_problem
from controllers.api.rayjob import (
    MANAGED_BY_VALUES,
    SUBMISSION_MODES,
    DeletionStrategy,
    RayCronJob,
    RayJob,
    RayJobSpec,
)
from controllers.api.spec_validation import is_autoscaling_enabled, validate_raycluster_spec
from controllers.api.validation import load_or_errors
from controllers.common import ray_version

__all__ = [
    "MAX_RAYCRONJOB_NAME_LENGTH",
    "MAX_RAYJOB_NAME_LENGTH",
    "rayjob_name_problem",
    "validate_raycronjob",
    "validate_rayjob",
    "validate_rayjob_metadata",
    "validate_rayjob_spec",
    "validate_rayjob_status",
]

# KubeRay: MaxRayJobNameLength = 53 - 6 (the cluster suffix), MaxRayCronJobNameLength = 47 - 11.
MAX_RAYJOB_NAME_LENGTH = 47
MAX_RAYCRONJOB_NAME_LENGTH = 36

_SPEC = "The RayJob spec is invalid: "
_METADATA = "The RayJob metadata is invalid: "
_WORKERS, _CLUSTER, _SELF = "DeleteWorkers", "DeleteCluster", "DeleteSelf"
_TTL_ORDER = (_WORKERS, _CLUSTER, _SELF)
_YAML_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def rayjob_name_problem(name: str) -> str | None:
    """KubeRay's text for a RayJob name that is too long or not DNS-1035, or None."""
    problem = object_name_problem("RayJob", name, MAX_RAYJOB_NAME_LENGTH)
    return None if problem is None else f"{_METADATA}{problem}"


def validate_rayjob_metadata(job: RayJob) -> list[FieldError]:
    name = job.name
    if not name:
        return (
            []
            if (job.metadata or {}).get("generateName")
            else [FieldError("metadata.name", _METADATA + "RayJob name is required", "metadata")]
        )
    problem = rayjob_name_problem(name)
    return [] if problem is None else [FieldError("metadata.name", problem, "metadata")]


def validate_rayjob_status(job: RayJob) -> list[FieldError]:
    status = job.status
    if status is None or status.job_deployment_status != "Waiting":
        return []
    if job.spec is not None and job.spec.mode() == "InteractiveMode":
        return []
    return [
        FieldError(
            "status.jobDeploymentStatus",
            "The RayJob status is invalid: JobDeploymentStatus cannot be `Waiting` when SubmissionMode "
            "is not InteractiveMode",
            "status",
        )
    ]


class _SpecChecker:
    def __init__(
        self, spec: RayJobSpec, path: str, deletion_gate: bool, gates: ClusterGates = ClusterGates()
    ) -> None:
        self.spec = spec
        self.path = path
        self.deletion_gate = deletion_gate
        self.gates = gates
        self.errors: list[FieldError] = []

    def add(self, rel: str, message: str) -> None:
        self.errors.append(FieldError(f"{self.path}.{rel}" if rel else self.path, message, "spec"))

    def lifecycle(self) -> None:
        spec = self.spec
        shutdown = bool(spec.shutdown_after_job_finishes)
        ttl = spec.ttl_seconds_after_finished or 0
        if spec.suspend and not shutdown:
            self.add(
                "suspend",
                _SPEC + "a RayJob with shutdownAfterJobFinishes set to false is not allowed to be suspended",
            )
        if ttl < 0:
            self.add(
                "ttlSecondsAfterFinished", _SPEC + "TTLSecondsAfterFinished must be a non-negative integer"
            )
        if not shutdown and ttl > 0:
            self.add(
                "ttlSecondsAfterFinished",
                _SPEC
                + "a RayJob with shutdownAfterJobFinishes set to false cannot have TTLSecondsAfterFinished",
            )
        for rel, value, what in (
            ("activeDeadlineSeconds", spec.active_deadline_seconds, "activeDeadlineSeconds"),
            ("preRunningDeadlineSeconds", spec.pre_running_deadline_seconds, "preRunningDeadlineSeconds"),
        ):
            if value is not None and value <= 0:
                self.add(rel, _SPEC + f"{what} must be a positive integer")
        if spec.backoff_limit is not None and spec.backoff_limit < 0:
            self.add("backoffLimit", _SPEC + "backoffLimit must be a non-negative integer")

    def cluster_and_mode(self, annotations: dict[str, str]) -> None:
        spec = self.spec
        mode = spec.mode()
        selector = spec.selected_cluster()
        if spec.managed_by is not None and spec.managed_by not in MANAGED_BY_VALUES:
            self.add("managedBy", f"must be either {MANAGED_BY_VALUES[0]!r} or {MANAGED_BY_VALUES[1]!r}")
        if mode not in SUBMISSION_MODES:
            self.add("submissionMode", f"{_SPEC}submissionMode must be one of {', '.join(SUBMISSION_MODES)}")
        if selector is not None:
            if spec.suspend:
                self.add("suspend", _SPEC + "the ClusterSelector mode doesn't support the suspend operation")
            if selector == "":
                self.add("clusterSelector", "cluster name in ClusterSelector should not be empty")
            if mode == "SidecarMode":
                self.add("clusterSelector", "ClusterSelector is not supported in SidecarMode")
            if (spec.backoff_limit or 0) > 0:
                self.add("backoffLimit", _SPEC + "BackoffLimit is incompatible with ClusterSelector mode")
        elif spec.ray_cluster_spec is None:
            self.add("rayClusterSpec", _SPEC + "one of RayClusterSpec or ClusterSelector must be set")
        if mode == "InteractiveMode" and (spec.backoff_limit or 0) > 0:
            self.add("backoffLimit", _SPEC + "BackoffLimit is incompatible with InteractiveMode")
        if mode == "SidecarMode":
            if spec.submitter_pod_template is not None:
                self.add(
                    "submitterPodTemplate", "Currently, SidecarMode doesn't support SubmitterPodTemplate"
                )
            if spec.submitter_config is not None:
                self.add("submitterConfig", "Currently, SidecarMode doesn't support SubmitterConfig")
            head = spec.ray_cluster_spec.head_group_spec if spec.ray_cluster_spec else None
            policy = (((head.template if head else None) or {}).get("spec") or {}).get("restartPolicy")
            if policy not in (None, "", "Never"):
                self.add(
                    "rayClusterSpec.headGroupSpec.template.spec.restartPolicy",
                    "restartPolicy for head Pod should be Never or unset when using SidecarMode",
                )
        cluster = spec.ray_cluster_spec
        if cluster is not None and selector is None:
            auth = cluster.auth_options
            if auth is not None and auth.enable_k8s_token_auth:
                self.add(
                    "rayClusterSpec.authOptions.enableK8sTokenAuth",
                    _SPEC + "K8s token auth mode is currently not supported for RayJob",
                )
            for err in validate_raycluster_spec(
                cluster,
                annotations,
                path=f"{self.path}.rayClusterSpec",
                labels={},
                owner_kind="RayJob",
                gates=self.gates,
            ):
                self.errors.append(FieldError(err.path, _SPEC + err.message, "spec"))

    def submission_inputs(self) -> None:
        spec = self.spec
        if spec.runtime_env_yaml:
            try:
                doc = yaml.load(spec.runtime_env_yaml, Loader=_YAML_LOADER)
            except yaml.YAMLError as exc:
                self.add(
                    "runtimeEnvYAML", f"failed to unmarshal RuntimeEnvYAML: {spec.runtime_env_yaml}: {exc}"
                )
            else:
                if not isinstance(doc, dict):
                    self.add(
                        "runtimeEnvYAML",
                        f"failed to unmarshal RuntimeEnvYAML: {spec.runtime_env_yaml}: not a YAML mapping",
                    )
        if spec.entrypoint_resources:
            try:
                parsed = orjson.loads(spec.entrypoint_resources)
            except orjson.JSONDecodeError as exc:
                parsed = exc
            numeric = isinstance(parsed, dict) and all(
                isinstance(v, int | float) and not isinstance(v, bool) for v in parsed.values()
            )
            if not numeric:
                self.add("entrypointResources", "entrypointResources must be a JSON object of numbers")
        version = spec.ray_cluster_spec.ray_version if spec.ray_cluster_spec else None
        if spec.metadata and version:
            try:
                supported = ray_version.supports_job_metadata(version)
            except ray_version.RayVersionError as exc:
                self.add("rayClusterSpec.rayVersion", f"failed to parse Ray version: {version}: {exc}")
            else:
                if not supported:
                    minimum = ray_version.JOB_METADATA
                    message = f"the Ray version must be at least {minimum} to use the metadata field"
                    self.add("metadata", message)

    def deletion(self) -> None:
        strategy = self.spec.deletion_strategy
        if strategy is None:
            return
        if not self.deletion_gate:
            self.add(
                "deletionStrategy",
                "RayJobDeletionPolicy feature gate must be enabled to use DeletionStrategy",
            )
            return
        legacy = strategy.on_success is not None or strategy.on_failure is not None
        rules = strategy.deletion_rules
        if rules is not None and self.spec.shutdown_after_job_finishes:
            self.add(
                "deletionStrategy.deletionRules",
                _SPEC + "spec.shutdownAfterJobFinishes and spec.deletionStrategy.deletionRules are "
                "mutually exclusive",
            )
        if rules is not None and legacy:
            self.add(
                "deletionStrategy",
                _SPEC + "Cannot use both legacy onSuccess/onFailure fields and deletionRules simultaneously",
            )
        if rules:
            self.deletion_rules(strategy)
        elif legacy:
            self.legacy_policies(strategy)
        else:
            self.add(
                "deletionStrategy",
                _SPEC + "DeletionStrategy requires either BOTH onSuccess and onFailure, OR the deletionRules "
                "field (cannot be empty)",
            )

    def legacy_policies(self, strategy: DeletionStrategy) -> None:
        if strategy.on_success is None or strategy.on_failure is None:
            self.add(
                "deletionStrategy",
                "both DeletionStrategy.OnSuccess and DeletionStrategy.OnFailure must be set when using the "
                "legacy deletion policy fields of DeletionStrategy",
            )
            return
        selector = self.spec.selected_cluster() is not None
        autoscaling = self.spec.ray_cluster_spec is not None and is_autoscaling_enabled(
            self.spec.ray_cluster_spec
        )
        for rel, label, policy in (
            ("onSuccess", "OnSuccess", strategy.on_success.policy),
            ("onFailure", "OnFailure", strategy.on_failure.policy),
        ):
            where = f"deletionStrategy.{rel}.policy"
            if policy is None:
                self.add(
                    where,
                    f"the DeletionPolicyType field of DeletionStrategy.{label} cannot be unset when "
                    "DeletionStrategy is enabled",
                )
                continue
            if selector and policy in (_CLUSTER, _WORKERS):
                outcome = "success" if rel == "onSuccess" else "failure"
                self.add(
                    where, f"the ClusterSelector mode doesn't support DeletionStrategy={policy} on {outcome}"
                )
            if policy == _WORKERS and autoscaling:
                self.add(
                    where,
                    "DeletionStrategy=DeleteWorkers currently does not support RayCluster with "
                    "autoscaling enabled",
                )
            if policy == "DeleteNone" and self.spec.shutdown_after_job_finishes:
                self.add(
                    where,
                    _SPEC + "shutdownAfterJobFinshes is set to 'true' while deletion policy is 'DeleteNone'",
                )

    def deletion_rules(self, strategy: DeletionStrategy) -> None:
        selector = self.spec.selected_cluster() is not None
        autoscaling = self.spec.ray_cluster_spec is not None and is_autoscaling_enabled(
            self.spec.ray_cluster_spec
        )
        seen: set[tuple[str, str, str]] = set()
        ttls: dict[tuple[str, str], dict[str, int]] = {}
        for i, rule in enumerate(strategy.deletion_rules or []):
            rel = f"deletionStrategy.deletionRules[{i}]"
            prefix = f"deletionRules[{i}]: "
            cond = rule.condition
            if cond is None or rule.policy is None:
                self.add(rel, prefix + "condition and policy are required")
                continue
            if cond.job_status is not None and cond.job_deployment_status is not None:
                self.add(
                    f"{rel}.condition",
                    prefix + "cannot set both JobStatus and JobDeploymentStatus at the same time",
                )
                continue
            if cond.job_status is None and cond.job_deployment_status is None:
                self.add(
                    f"{rel}.condition",
                    prefix + "exactly one of JobStatus and JobDeploymentStatus must be set",
                )
                continue
            ttl = cond.ttl_seconds or 0
            if ttl < 0:
                self.add(f"{rel}.condition.ttlSeconds", prefix + "TTLSeconds must be non-negative")
            if selector and rule.policy in (_CLUSTER, _WORKERS):
                self.add(
                    f"{rel}.policy",
                    prefix + f"DeletionPolicyType '{rule.policy}' not supported when ClusterSelector is set",
                )
            if rule.policy == _WORKERS and autoscaling:
                self.add(
                    f"{rel}.policy",
                    prefix + "DeletionPolicyType 'DeleteWorkers' not supported with autoscaling enabled",
                )
            kind, value = (
                ("JobStatus", cond.job_status)
                if cond.job_status
                else ("JobDeploymentStatus", str(cond.job_deployment_status))
            )
            key = (rule.policy, kind, value)
            if key in seen:
                self.add(
                    rel,
                    prefix + f"duplicate rule for DeletionPolicyType '{rule.policy}' and {kind} '{value}'",
                )
            seen.add(key)
            ttls.setdefault((kind, value), {})[rule.policy] = ttl
        for (kind, value), by_policy in ttls.items():
            ordered = [(p, by_policy[p]) for p in _TTL_ORDER if p in by_policy]
            for (prev, prev_ttl), (policy, ttl) in itertools.pairwise(ordered):
                if ttl < prev_ttl:
                    self.add(
                        "deletionStrategy.deletionRules",
                        f"for {kind} '{value}': {policy} TTL ({ttl}) must be >= {prev} TTL ({prev_ttl})",
                    )


def validate_rayjob_spec(
    spec: RayJobSpec | None,
    annotations: dict[str, str] | None = None,
    *,
    path: str = "spec",
    deletion_gate: bool = True,
    gates: ClusterGates = ClusterGates(),
) -> list[FieldError]:
    """Every spec rule; ``deletion_gate`` is the ``RayJobDeletionPolicy`` feature gate (on by default),
    ``gates`` the RayCluster alpha gates ``rayClusterSpec`` is checked with."""
    if spec is None:
        return [FieldError(path, "spec is required")]
    check = _SpecChecker(spec, path, deletion_gate, gates)
    check.lifecycle()
    check.deletion()
    check.cluster_and_mode(annotations or {})
    check.submission_inputs()
    return check.errors


def validate_rayjob(
    obj: RayJob | dict[str, Any], *, deletion_gate: bool = True, gates: ClusterGates = ClusterGates()
) -> list[FieldError]:
    """All problems with a RayJob: metadata, then spec, then status (KubeRay's order)."""
    job = load_or_errors(RayJob, obj)
    if isinstance(job, list):
        return job
    return (
        validate_rayjob_metadata(job)
        + validate_rayjob_spec(job.spec, job.annotations, deletion_gate=deletion_gate, gates=gates)
        + validate_rayjob_status(job)
    )


def validate_raycronjob(obj: RayCronJob | dict[str, Any], *, deletion_gate: bool = True) -> list[FieldError]:
    cron = load_or_errors(RayCronJob, obj)
    if isinstance(cron, list):
        return cron
    errs: list[FieldError] = []
    if len(cron.name) > MAX_RAYCRONJOB_NAME_LENGTH:
        msg = f"RayCronJob name should be no more than {MAX_RAYCRONJOB_NAME_LENGTH} characters"
        errs.append(FieldError("metadata.name", msg, "metadata"))
    spec = cron.spec
    if spec is None:
        return [*errs, FieldError("spec", "spec is required")]
    if not spec.schedule:
        errs.append(FieldError("spec.schedule", "invalid cron schedule: empty spec string"))
    else:
        try:
            parse_schedule(spec.schedule, spec.time_zone)
        except ScheduleError as exc:
            errs.append(FieldError(f"spec.{exc.field}", str(exc)))
    for err in validate_rayjob_spec(spec.job_template, path="spec.jobTemplate", deletion_gate=deletion_gate):
        errs.append(FieldError(err.path, f"invalid RayJob template: {err.message}", "spec"))
    return errs
