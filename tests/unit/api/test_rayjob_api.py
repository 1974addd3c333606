"""RayJob / RayCronJob models, defaults, validation (one case per KubeRay message) and schedules."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.api.cron_schedule import ScheduleError, parse_schedule
from controllers.api.defaults import with_defaults
from controllers.api.job_validation import validate_raycronjob, validate_rayjob
from controllers.api.rayjob import load_raycronjob, load_rayjob
from tests.manifest_edits import Mutation, all_of, delete_path, set_path

SAMPLES = Path(__file__).resolve().parents[2] / "fixtures" / "kuberay" / "samples"


def _docs(kinds: tuple[str, ...]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted(SAMPLES.glob("ray-*job*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") in kinds:
                out.append((path.name, doc))
    return out


JOB_SAMPLES = _docs(("RayJob",))
CRON_SAMPLES = _docs(("RayCronJob",))


def test_all_21_samples_are_present() -> None:
    assert len({name for name, _ in JOB_SAMPLES + CRON_SAMPLES}) == 21
    assert len(CRON_SAMPLES) == 2


@pytest.mark.parametrize(("name", "doc"), JOB_SAMPLES, ids=[n for n, _ in JOB_SAMPLES])
def test_job_sample_round_trips_and_validates(name: str, doc: dict[str, Any]) -> None:
    job = load_rayjob(copy.deepcopy(doc))
    assert job.to_dict() == doc
    assert [str(e) for e in validate_rayjob(with_defaults(job))] == []


@pytest.mark.parametrize(("name", "doc"), CRON_SAMPLES, ids=[n for n, _ in CRON_SAMPLES])
def test_cron_sample_round_trips_and_validates(name: str, doc: dict[str, Any]) -> None:
    cron = load_raycronjob(copy.deepcopy(doc))
    assert cron.to_dict() == doc
    assert [str(e) for e in validate_raycronjob(with_defaults(cron))] == []


def test_defaults_fill_the_crd_values() -> None:
    (_, doc) = next(d for d in JOB_SAMPLES if d[0] == "ray-job.sample.yaml")
    job = with_defaults(load_rayjob(doc))
    assert job.spec is not None
    assert (job.spec.submission_mode, job.spec.backoff_limit, job.spec.ttl_seconds_after_finished) == (
        "K8sJobMode",
        0,
        0,
    )
    assert job.spec.ray_cluster_spec is not None and job.spec.ray_cluster_spec.head_group_spec is not None
    assert job.spec.ray_cluster_spec.head_group_spec.ray_start_params is not None


BASE: dict[str, Any] = next(d for n, d in JOB_SAMPLES if n == "ray-job.sample.yaml")
SEL = {"ray.io/cluster": "existing"}
RULE_OK = {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 10}}

# (id, mutation, path the error names, a fragment of KubeRay's message)
INVALID: list[tuple[str, Mutation, str, str]] = [
    ("name-48", set_path("metadata.name", "a" * 48), "metadata.name", "no more than 47 characters"),
    ("name-dns", set_path("metadata.name", "1job"), "metadata.name", "valid DNS1035 label"),
    ("suspend-no-shutdown", set_path("spec.suspend", True), "spec.suspend", "not allowed to be suspended"),
    (
        "ttl-negative",
        set_path("spec.ttlSecondsAfterFinished", -1),
        "spec.ttlSecondsAfterFinished",
        "non-negative",
    ),
    (
        "ttl-without-shutdown",
        set_path("spec.ttlSecondsAfterFinished", 5),
        "spec.ttlSecondsAfterFinished",
        "cannot have TTLSecondsAfterFinished",
    ),
    (
        "rules-and-shutdown",
        all_of(
            set_path("spec.shutdownAfterJobFinishes", True),
            set_path("spec.deletionStrategy", {"deletionRules": [RULE_OK]}),
        ),
        "spec.deletionStrategy.deletionRules",
        "mutually exclusive",
    ),
    (
        "rules-and-legacy",
        set_path(
            "spec.deletionStrategy",
            {"deletionRules": [RULE_OK], "onSuccess": {"policy": "DeleteCluster"}},
        ),
        "spec.deletionStrategy",
        "legacy onSuccess/onFailure fields and deletionRules",
    ),
    (
        "strategy-empty",
        set_path("spec.deletionStrategy", {}),
        "spec.deletionStrategy",
        "requires either BOTH",
    ),
    (
        "legacy-half",
        set_path("spec.deletionStrategy", {"onSuccess": {"policy": "DeleteCluster"}}),
        "spec.deletionStrategy",
        "must be set when using the legacy",
    ),
    (
        "legacy-delete-none-with-shutdown",
        all_of(
            set_path("spec.shutdownAfterJobFinishes", True),
            set_path(
                "spec.deletionStrategy",
                {"onSuccess": {"policy": "DeleteNone"}, "onFailure": {"policy": "DeleteCluster"}},
            ),
        ),
        "spec.deletionStrategy.onSuccess.policy",
        "deletion policy is 'DeleteNone'",
    ),
    (
        "rule-both-conditions",
        set_path(
            "spec.deletionStrategy",
            {
                "deletionRules": [
                    {
                        "policy": "DeleteSelf",
                        "condition": {"jobStatus": "FAILED", "jobDeploymentStatus": "Failed"},
                    }
                ]
            },
        ),
        "spec.deletionStrategy.deletionRules[0].condition",
        "cannot set both",
    ),
    (
        "rule-duplicate",
        set_path("spec.deletionStrategy", {"deletionRules": [RULE_OK, RULE_OK]}),
        "spec.deletionStrategy.deletionRules[1]",
        "duplicate rule for DeletionPolicyType 'DeleteCluster' and JobStatus 'SUCCEEDED'",
    ),
    (
        "rule-ttl-order",
        set_path(
            "spec.deletionStrategy",
            {
                "deletionRules": [
                    RULE_OK,
                    {"policy": "DeleteSelf", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 5}},
                ]
            },
        ),
        "spec.deletionStrategy.deletionRules",
        "DeleteSelf TTL (5) must be >= DeleteCluster TTL (10)",
    ),
    (
        "rule-cluster-with-selector",
        all_of(
            delete_path("spec.rayClusterSpec"),
            set_path("spec.clusterSelector", SEL),
            set_path("spec.deletionStrategy", {"deletionRules": [RULE_OK]}),
        ),
        "spec.deletionStrategy.deletionRules[0].policy",
        "not supported when ClusterSelector is set",
    ),
    (
        "selector-suspend",
        all_of(
            delete_path("spec.rayClusterSpec"),
            set_path("spec.clusterSelector", SEL),
            set_path("spec.shutdownAfterJobFinishes", True),
            set_path("spec.suspend", True),
        ),
        "spec.suspend",
        "doesn't support the suspend operation",
    ),
    (
        "no-cluster",
        delete_path("spec.rayClusterSpec"),
        "spec.rayClusterSpec",
        "one of RayClusterSpec or ClusterSelector",
    ),
    (
        "selector-empty",
        all_of(delete_path("spec.rayClusterSpec"), set_path("spec.clusterSelector", {"ray.io/cluster": ""})),
        "spec.clusterSelector",
        "should not be empty",
    ),
    (
        "selector-sidecar",
        all_of(
            delete_path("spec.rayClusterSpec"),
            set_path("spec.clusterSelector", SEL),
            set_path("spec.submissionMode", "SidecarMode"),
        ),
        "spec.clusterSelector",
        "not supported in SidecarMode",
    ),
    (
        "selector-backoff",
        all_of(
            delete_path("spec.rayClusterSpec"),
            set_path("spec.clusterSelector", SEL),
            set_path("spec.backoffLimit", 1),
        ),
        "spec.backoffLimit",
        "incompatible with ClusterSelector mode",
    ),
    (
        "interactive-backoff",
        all_of(set_path("spec.submissionMode", "InteractiveMode"), set_path("spec.backoffLimit", 1)),
        "spec.backoffLimit",
        "incompatible with InteractiveMode",
    ),
    (
        "sidecar-template",
        all_of(
            set_path("spec.submissionMode", "SidecarMode"),
            set_path("spec.submitterPodTemplate", {"spec": {"containers": []}}),
        ),
        "spec.submitterPodTemplate",
        "doesn't support SubmitterPodTemplate",
    ),
    (
        "sidecar-config",
        all_of(
            set_path("spec.submissionMode", "SidecarMode"),
            set_path("spec.submitterConfig", {"backoffLimit": 1}),
        ),
        "spec.submitterConfig",
        "doesn't support SubmitterConfig",
    ),
    (
        "sidecar-restart-policy",
        all_of(
            set_path("spec.submissionMode", "SidecarMode"),
            set_path("spec.rayClusterSpec.headGroupSpec.template.spec.restartPolicy", "Always"),
        ),
        "spec.rayClusterSpec.headGroupSpec.template.spec.restartPolicy",
        "should be Never or unset",
    ),
    (
        "k8s-token-auth",
        set_path("spec.rayClusterSpec.authOptions", {"enableK8sTokenAuth": True}),
        "spec.rayClusterSpec.authOptions.enableK8sTokenAuth",
        "not supported for RayJob",
    ),
    (
        "cluster-spec-invalid",
        set_path("spec.rayClusterSpec.workerGroupSpecs[0].minReplicas", 9),
        "spec.rayClusterSpec.workerGroupSpecs[0].minReplicas",
        "The RayJob spec is invalid: ",
    ),
    (
        "runtime-env-not-yaml",
        set_path("spec.runtimeEnvYAML", "a: [\n"),
        "spec.runtimeEnvYAML",
        "failed to unmarshal",
    ),
    (
        "deadline-zero",
        set_path("spec.activeDeadlineSeconds", 0),
        "spec.activeDeadlineSeconds",
        "positive integer",
    ),
    (
        "pre-running-zero",
        set_path("spec.preRunningDeadlineSeconds", 0),
        "spec.preRunningDeadlineSeconds",
        "positive integer",
    ),
    ("backoff-negative", set_path("spec.backoffLimit", -1), "spec.backoffLimit", "non-negative"),
    ("unknown-mode", set_path("spec.submissionMode", "BatchMode"), "spec.submissionMode", "must be one of"),
    (
        "bad-resources",
        set_path("spec.entrypointResources", '{"x": "a"}'),
        "spec.entrypointResources",
        "JSON object",
    ),
    (
        "metadata-old-ray",
        all_of(set_path("spec.metadata", {"a": "b"}), set_path("spec.rayClusterSpec.rayVersion", "2.5.0")),
        "spec.metadata",
        "at least 2.6.0",
    ),
    (
        "waiting-not-interactive",
        set_path("status", {"jobDeploymentStatus": "Waiting"}),
        "status.jobDeploymentStatus",
        "cannot be `Waiting`",
    ),
    ("type-error", set_path("spec.backoffLimit", "2"), "spec.backoffLimit", "valid integer"),
]


@pytest.mark.parametrize(
    ("mutate", "path", "fragment"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID]
)
def test_invalid_rayjob_names_the_field_and_kuberays_message(
    mutate: Mutation, path: str, fragment: str
) -> None:
    obj = copy.deepcopy(BASE)
    mutate(obj)
    errors = validate_rayjob(obj)
    assert any(e.path == path and fragment in e.message for e in errors), [str(e) for e in errors]


def test_deletion_strategy_needs_the_feature_gate() -> None:
    obj = copy.deepcopy(BASE)
    set_path("spec.deletionStrategy", {"deletionRules": [RULE_OK]})(obj)
    assert validate_rayjob(obj) == []
    (err,) = validate_rayjob(obj, deletion_gate=False)
    assert "RayJobDeletionPolicy feature gate must be enabled" in err.message


def test_metadata_error_category_picks_the_event_reason() -> None:
    obj = copy.deepcopy(BASE)
    set_path("metadata.name", "x" * 48)(obj)
    assert {e.category for e in validate_rayjob(obj)} == {"metadata"}


CRON: dict[str, Any] = next(d for n, d in CRON_SAMPLES if n == "ray-cronjob.sample.yaml")


@pytest.mark.parametrize(
    ("mutate", "path", "fragment"),
    [
        (set_path("metadata.name", "c" * 37), "metadata.name", "no more than 36 characters"),
        (set_path("spec.schedule", "CRON_TZ=UTC * * * * *"), "spec.schedule", "cannot use TZ or CRON_TZ"),
        (set_path("spec.schedule", "61 * * * *"), "spec.schedule", "invalid cron schedule"),
        (set_path("spec.schedule", "* * * * * *"), "spec.schedule", "expected exactly 5 fields"),
        (set_path("spec.timeZone", ""), "spec.timeZone", "timeZone must not be empty string"),
        (set_path("spec.timeZone", "Mars/Olympus"), "spec.timeZone", "invalid time zone"),
        (
            set_path("spec.jobTemplate.ttlSecondsAfterFinished", -3),
            "spec.jobTemplate.ttlSecondsAfterFinished",
            "invalid RayJob template: ",
        ),
    ],
)
def test_invalid_raycronjob(mutate: Mutation, path: str, fragment: str) -> None:
    obj = copy.deepcopy(CRON)
    mutate(obj)
    errors = validate_raycronjob(obj)
    assert any(e.path == path and fragment in e.message for e in errors), [str(e) for e in errors]


def test_schedule_next_tick_in_a_time_zone_across_dst() -> None:
    schedule = parse_schedule("0 9 * * *", "America/New_York")
    # 2026-03-08 is the US spring-forward day: 09:00 EDT is 13:00 UTC (EST would be 14:00).
    after = datetime(2026, 3, 7, 15, 0, tzinfo=UTC)
    assert schedule.next_after(after) == datetime(2026, 3, 8, 13, 0, tzinfo=UTC)
    every = parse_schedule("@every 90s", "UTC")
    assert every.next_after(datetime(2026, 1, 1, tzinfo=UTC)) == datetime(2026, 1, 1, 0, 1, 30, tzinfo=UTC)
    hourly = parse_schedule("@hourly", "UTC")
    assert hourly.next_after(datetime(2026, 1, 1, 0, 0, tzinfo=UTC)) == datetime(2026, 1, 1, 1, 0, tzinfo=UTC)
    with pytest.raises(ScheduleError, match="unrecognized descriptor"):
        parse_schedule("@fortnightly", "UTC")
