"""KubeRay's webhook checks on their own: which checks run on create and update, the first metadata
problem only, reported at ``metadata.name`` with KubeRay's wording, and an ``Invalid`` status."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.api.names import object_name_problem
from controllers.api.validation import rayservice_annotations_problem
from controllers.webhooks.validators import RAYCLUSTER, RAYJOB, RAYSERVICE
from kuberay_py.webhook import InvalidField, StatusError, invalid


def _obj(
    name: str, groups: list[str] | None = None, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if annotations:
        meta["annotations"] = annotations
    spec = {"workerGroupSpecs": [{"groupName": g, "replicas": 1} for g in groups or []]}
    return {"metadata": meta, "spec": spec}


def _status(fn: Any, *args: Any) -> dict[str, Any]:
    with pytest.raises(StatusError) as info:
        fn(*args)
    return info.value.status


def test_raycluster_reports_name_and_duplicate_group_together() -> None:
    status = _status(RAYCLUSTER.validate_create, _obj("x" * 54, ["a", "b", "a"]))
    assert status["code"] == 422 and status["reason"] == "Invalid"
    assert [c["field"] for c in status["details"]["causes"]] == ["metadata.name", "spec.workerGroupSpecs[2]"]
    assert status["message"] == (
        f'RayCluster.ray.io "{"x" * 54}" is invalid: [metadata.name: Invalid value: "{"x" * 54}": RayCluster '
        "name should be no more than 53 characters, spec.workerGroupSpecs[2]: Invalid value: "
        '{"groupName":"a","replicas":1}: worker group names must be unique]'
    )


def test_update_checks_the_new_object_only() -> None:
    assert RAYCLUSTER.validate_update(_obj("1bad"), _obj("good", ["a"])) == []
    status = _status(RAYCLUSTER.validate_update, _obj("good"), _obj("good", ["a", "a"]))
    assert status["details"]["causes"][0]["field"] == "spec.workerGroupSpecs[1]"
    assert RAYCLUSTER.validate_delete is None  # deletes are allowed without a check


def test_rayjob_and_rayservice_check_metadata_only() -> None:
    assert RAYJOB.validate_create(_obj("job", ["a", "a"])) == []
    status = _status(RAYJOB.validate_create, _obj("Job"))
    assert status["details"]["causes"][0]["message"].startswith(
        'Invalid value: "Job": The RayJob metadata is invalid: RayJob name should be a valid DNS1035 label: ['
    )
    assert RAYSERVICE.validate_create(_obj("svc", ["a", "a"], {"ray.io/initializing-timeout": "90"})) == []
    status = _status(RAYSERVICE.validate_create, _obj("s" * 48))
    assert status["details"]["causes"][0]["message"].endswith(
        "The RayService metadata is invalid: RayService name should be no more than 47 characters"
    )


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("5m", None),
        ("1h30m", None),
        ("120", None),
        ("+3", None),
        ("", None),
        ("0", "must be a positive duration, got: 0"),
        ("-5s", "must be a positive duration, got: -5s"),
        ("-5", "must be a positive integer (seconds), got: -5"),
        ("1 0", "has invalid format: 1 0. Expected Go duration format"),
        ("1_0", "has invalid format: 1_0."),
        ("5d", "has invalid format: 5d."),
    ],
)
def test_initializing_timeout_as_kuberay_parses_it(value: str, problem: str | None) -> None:
    found = rayservice_annotations_problem({"ray.io/initializing-timeout": value})
    if problem is None:
        assert found is None
    else:
        prefix = "RayService annotations is invalid: annotation ray.io/initializing-timeout "
        assert found is not None and found.startswith(prefix + problem)


def test_name_problem_reports_length_before_syntax() -> None:
    too_long = "RayCluster name should be no more than 53 characters"
    assert object_name_problem("RayCluster", "A" * 60, 53) == too_long
    assert object_name_problem("RayCluster", "ok-name", 53) is None


def test_invalid_status_for_simple_values() -> None:
    err = invalid(
        "ray.io", "RayJob", "j", [InvalidField("spec.x", 3, "too big"), InvalidField("spec.y", None, "")]
    )
    assert (
        err.status["message"]
        == 'RayJob.ray.io "j" is invalid: [spec.x: Invalid value: 3: too big, spec.y: Invalid value: null]'
    )
