"""Semantic validation: valid samples pass; each invalid manifest yields an error naming its field."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.api import load_raycluster, load_rayservice
from controllers.api.defaults import with_defaults
from controllers.api.errors import FieldError
from controllers.api.names import parse_go_duration
from controllers.api.validation import (
    parse_initializing_timeout,
    validate_raycluster,
    validate_rayservice,
)
from tests.manifest_edits import Mutation, all_of, delete_path, duplicate_first_group, set_path

SAMPLES = Path(__file__).resolve().parents[3] / "config" / "samples"
CLUSTER: dict[str, Any] = yaml.safe_load((SAMPLES / "ray-cluster.sample.yaml").read_text())
SERVICE: dict[str, Any] = yaml.safe_load((SAMPLES / "ray-service.sample.yaml").read_text())

W0 = "spec.workerGroupSpecs[0]"
HEAD_ENV = "spec.headGroupSpec.template.spec.containers[0].env"

CLUSTER_CASES: list[tuple[str, Mutation, str, str]] = [
    ("name too long", set_path("metadata.name", "a" * 54), "metadata.name", "no more than 53"),
    ("name not DNS-1035", set_path("metadata.name", "1abc"), "metadata.name", "DNS1035"),
    ("name uppercase", set_path("metadata.name", "Abc"), "metadata.name", "DNS1035"),
    ("no head group", delete_path("spec.headGroupSpec"), "spec.headGroupSpec", "required"),
    (
        "no head template",
        delete_path("spec.headGroupSpec.template"),
        "spec.headGroupSpec.template",
        "required",
    ),
    (
        "head without containers",
        set_path("spec.headGroupSpec.template.spec.containers", []),
        "spec.headGroupSpec.template.spec.containers",
        "at least one container",
    ),
    (
        "worker without containers",
        set_path(f"{W0}.template.spec.containers", []),
        f"{W0}.template.spec.containers",
        "at least one container",
    ),
    ("min > max", set_path(f"{W0}.minReplicas", 6), f"{W0}.minReplicas", "greater than maxReplicas"),
    ("negative min", set_path(f"{W0}.minReplicas", -1), f"{W0}.minReplicas", "negative minReplicas"),
    ("negative max", set_path(f"{W0}.maxReplicas", -1), f"{W0}.maxReplicas", "negative maxReplicas"),
    ("max unset without autoscaling", delete_path(f"{W0}.maxReplicas"), f"{W0}.maxReplicas", "must set both"),
    ("min unset without autoscaling", delete_path(f"{W0}.minReplicas"), f"{W0}.minReplicas", "must set both"),
    ("numOfHosts 0", set_path(f"{W0}.numOfHosts", 0), f"{W0}.numOfHosts", "numOfHosts >= 1"),
    ("duplicate group names", duplicate_first_group, "spec.workerGroupSpecs[1].groupName", "duplicate"),
    ("empty group name", set_path(f"{W0}.groupName", ""), f"{W0}.groupName", "required"),
    (
        "ft annotation and options",
        all_of(
            set_path("metadata.annotations", {"ray.io/ft-enabled": "true"}),
            set_path("spec.gcsFaultToleranceOptions", {"redisAddress": "redis:6379"}),
        ),
        "spec.gcsFaultToleranceOptions",
        "ray.io/ft-enabled",
    ),
    (
        "redis address env without FT",
        set_path(HEAD_ENV, [{"name": "RAY_REDIS_ADDRESS", "value": "redis:6379"}]),
        HEAD_ENV,
        "RAY_REDIS_ADDRESS",
    ),
    (
        "redis-password param with FT options",
        all_of(
            set_path("spec.gcsFaultToleranceOptions", {"redisAddress": "r:6379"}),
            set_path("spec.headGroupSpec.rayStartParams", {"redis-password": "x"}),
        ),
        "spec.headGroupSpec.rayStartParams",
        "redis-password",
    ),
    (
        "redis username param",
        set_path("spec.headGroupSpec.rayStartParams", {"redis-username": "u"}),
        "spec.headGroupSpec.rayStartParams",
        "redis username",
    ),
    (
        "rayStartParams and resources",
        all_of(
            set_path(f"{W0}.rayStartParams", {"num-cpus": "1"}), set_path(f"{W0}.resources", {"CPU": "1"})
        ),
        f"{W0}.resources",
        "both rayStartParams and resources",
    ),
    (
        "bad group label key",
        set_path("spec.headGroupSpec.labels", {"-bad": "x"}),
        "spec.headGroupSpec.labels",
        "invalid label key",
    ),
    (
        "suspended group with autoscaler",
        all_of(set_path("spec.enableInTreeAutoscaling", True), set_path(f"{W0}.suspend", True)),
        f"{W0}.suspend",
        "Autoscaler",
    ),
    (
        "autoscaler v2 with restartPolicy Always",
        all_of(
            set_path("spec.enableInTreeAutoscaling", True),
            set_path("spec.autoscalerOptions", {"version": "v2"}),
            set_path("spec.headGroupSpec.template.spec.restartPolicy", "Always"),
        ),
        "spec.headGroupSpec.template.spec.restartPolicy",
        "Never or unset",
    ),
    (
        "idle timeout without autoscaler v2",
        set_path(f"{W0}.idleTimeoutSeconds", 60),
        f"{W0}.idleTimeoutSeconds",
        "autoscaler v2",
    ),
    (
        "upgrade strategy type",
        set_path("spec.upgradeStrategy", {"type": "Rolling"}),
        "spec.upgradeStrategy.type",
        "Rolling",
    ),
    (
        "rocksdb backend",
        set_path("spec.gcsFaultToleranceOptions", {"backend": "rocksdb"}),
        "backend",
        "RocksDB",
    ),
    (
        "token auth on old Ray",
        all_of(set_path("spec.authOptions", {"mode": "token"}), set_path("spec.rayVersion", "2.40.0")),
        "spec.rayVersion",
        "2.52.0",
    ),
    (
        "network policy",
        set_path("spec.networkPolicy", {"mode": "DenyAll"}),
        "spec.networkPolicy",
        "requires the RayClusterNetworkPolicy feature gate",
    ),
    ("replicas is a string", set_path(f"{W0}.replicas", "3"), f"{W0}.replicas", "integer"),
    ("suspend is a string", set_path("spec.suspend", "yes"), "spec.suspend", "boolean"),
    (
        "suspending and suspended",
        set_path(
            "status.conditions",
            [
                {"type": "RayClusterSuspending", "status": "True"},
                {"type": "RayClusterSuspended", "status": "True"},
            ],
        ),
        "status.conditions",
        "both true",
    ),
]


S_CLUSTER = "spec.rayClusterConfig"
SERVICE_CASES: list[tuple[str, Mutation, str, str]] = [
    ("name too long", set_path("metadata.name", "s" * 48), "metadata.name", "no more than 47"),
    ("name not DNS-1035", set_path("metadata.name", "svc_1"), "metadata.name", "DNS1035"),
    ("no cluster config", delete_path("spec.rayClusterConfig"), S_CLUSTER, "required"),
    (
        "custom head service name",
        set_path(f"{S_CLUSTER}.headGroupSpec.headService", {"metadata": {"name": "mine"}}),
        f"{S_CLUSTER}.headGroupSpec.headService.metadata.name",
        "should not be set",
    ),
    ("upgrade type", set_path("spec.upgradeStrategy", {"type": "Blue"}), "spec.upgradeStrategy.type", "Blue"),
    (
        "negative deletion delay",
        set_path("spec.rayClusterDeletionDelaySeconds", -1),
        "spec.rayClusterDeletionDelaySeconds",
        "non-negative",
    ),
    (
        "serve config not YAML",
        set_path("spec.serveConfigV2", "applications: [\n"),
        "spec.serveConfigV2",
        "not valid YAML",
    ),
    (
        "serve config without applications",
        set_path("spec.serveConfigV2", "http_options: {}\n"),
        "spec.serveConfigV2",
        "applications",
    ),
    (
        "serve config applications not a list",
        set_path("spec.serveConfigV2", "applications: {a: 1}\n"),
        "spec.serveConfigV2",
        "applications",
    ),
    (
        "bad initializing timeout",
        set_path("metadata.annotations", {"ray.io/initializing-timeout": "ten minutes"}),
        "metadata.annotations",
        "invalid format",
    ),
    (
        "zero initializing timeout",
        set_path("metadata.annotations", {"ray.io/initializing-timeout": "0"}),
        "metadata.annotations",
        "positive",
    ),
    (
        "inner cluster min > max",
        set_path(f"{S_CLUSTER}.workerGroupSpecs[0].minReplicas", 9),
        f"{S_CLUSTER}.workerGroupSpecs[0].minReplicas",
        "greater than maxReplicas",
    ),
    (
        "k8s token auth",
        set_path(f"{S_CLUSTER}.authOptions", {"mode": "token", "enableK8sTokenAuth": True}),
        f"{S_CLUSTER}.authOptions.enableK8sTokenAuth",
        "not supported for RayService",
    ),
    (
        "cluster upgrade strategy inside a RayService",
        set_path(f"{S_CLUSTER}.upgradeStrategy", {"type": "Recreate"}),
        f"{S_CLUSTER}.upgradeStrategy",
        "cannot be set",
    ),
    (
        "delay is a string",
        set_path("spec.rayClusterDeletionDelaySeconds", "60"),
        "spec.rayClusterDeletionDelaySeconds",
        "integer",
    ),
]


INVALID = [
    pytest.param(CLUSTER, validate_raycluster, *case, id=f"RayCluster: {name}")
    for name, *case in CLUSTER_CASES
] + [
    pytest.param(SERVICE, validate_rayservice, *case, id=f"RayService: {name}")
    for name, *case in SERVICE_CASES
]


@pytest.mark.parametrize(("sample", "validate", "mutate", "path", "text"), INVALID)
def test_invalid_manifest_is_reported_at_its_field(
    sample: dict[str, Any],
    validate: Callable[[dict[str, Any]], list[FieldError]],
    mutate: Mutation,
    path: str,
    text: str,
) -> None:
    obj = copy.deepcopy(sample)
    mutate(obj)
    errors = validate(obj)
    assert any(path in e.path and text in e.message for e in errors), [str(e) for e in errors]


def test_samples_are_valid() -> None:
    assert validate_raycluster(copy.deepcopy(CLUSTER)) == []
    assert validate_rayservice(copy.deepcopy(SERVICE)) == []


def test_every_problem_is_reported_not_just_the_first() -> None:
    obj = copy.deepcopy(CLUSTER)
    obj["metadata"]["name"] = "Bad_Name"
    obj["spec"]["workerGroupSpecs"][0]["minReplicas"] = 9
    obj["spec"]["workerGroupSpecs"][0]["numOfHosts"] = 0
    paths = {e.path for e in validate_raycluster(obj)}
    assert {"metadata.name", f"{W0}.minReplicas", f"{W0}.numOfHosts"} <= paths


def test_errors_carry_the_event_category() -> None:
    obj = copy.deepcopy(CLUSTER)
    obj["metadata"]["name"] = "x" * 60
    obj["spec"]["workerGroupSpecs"][0]["minReplicas"] = 9
    errors = validate_raycluster(obj)
    assert {e.category for e in errors} == {"metadata", "spec"}
    assert str(FieldError("a.b", "bad")) == "a.b: bad"


def test_autoscaling_makes_min_and_max_optional() -> None:
    obj = copy.deepcopy(CLUSTER)
    obj["spec"]["enableInTreeAutoscaling"] = True
    del obj["spec"]["workerGroupSpecs"][0]["minReplicas"]
    del obj["spec"]["workerGroupSpecs"][0]["maxReplicas"]
    assert validate_raycluster(obj) == []


def test_garbage_never_raises() -> None:
    for junk in (
        {},
        {"spec": None},
        {"spec": {"headGroupSpec": {"template": {"spec": {"containers": "x"}}}}},
        {"metadata": {"name": 5}},
        {"spec": {"workerGroupSpecs": [None]}},
    ):
        assert validate_raycluster(junk), junk
        assert validate_rayservice(junk), junk


def test_defaults_fill_what_the_crd_defaults() -> None:
    obj = copy.deepcopy(CLUSTER)
    group = obj["spec"]["workerGroupSpecs"][0]
    del group["replicas"]
    del obj["spec"]["headGroupSpec"]["rayStartParams"]
    out = with_defaults(load_raycluster(obj)).to_dict()
    worker = out["spec"]["workerGroupSpecs"][0]
    assert (worker["replicas"], worker["numOfHosts"], worker["priority"]) == (0, 1, 0)
    assert out["spec"]["headGroupSpec"]["rayStartParams"] == {}
    assert "replicas" not in obj["spec"]["workerGroupSpecs"][0]  # input untouched
    svc = with_defaults(load_rayservice(copy.deepcopy(SERVICE))).to_dict()
    assert svc["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["numOfHosts"] == 1


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("5m", 300.0), ("1h30m", 5400.0), ("1.5s", 1.5), ("300ms", 0.3), ("-2s", -2.0), ("0", 0.0)],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "10", "5d", "m", "1h x"])
def test_bad_go_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_go_duration(text)


def test_initializing_timeout_accepts_seconds_and_durations() -> None:
    assert parse_initializing_timeout("600") == 600.0
    assert parse_initializing_timeout("10m") == 600.0
    with pytest.raises(ValueError):
        parse_initializing_timeout("-5m")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "1abc",
            "RayCluster name should be a valid DNS1035 label: [a DNS-1035 label must consist of lower "
            "case alphanumeric characters or '-', start with an alphabetic character, and end with an "
            "alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
            "'[a-z]([-a-z0-9]*[a-z0-9])?')]",
        ),
        ("A" * 60, "RayCluster name should be no more than 53 characters"),  # length only, as KubeRay
    ],
)
def test_name_problem_is_kuberays_one_message(name: str, message: str) -> None:
    """KubeRay's ``ValidateRayClusterMetadata`` stops at the first problem and prints the DNS-1035
    errors as Go prints a ``[]string``; users grep for this text in events and status."""
    obj = copy.deepcopy(CLUSTER)
    obj["metadata"]["name"] = name
    assert [(e.path, e.message) for e in validate_raycluster(obj) if e.path == "metadata.name"] == [
        ("metadata.name", message)
    ]
