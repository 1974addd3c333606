"""The one ``rayVersion`` parser against KubeRay v1.7.0's rules, and every check that uses it.

Expected values are what apimachinery's ``version.ParseGeneric`` (cluster feature gates) and
Masterminds semver's ``NewVersion`` plus ``>= 2.6.0`` (RayJob metadata) give for each input.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.api.job_validation import validate_rayjob
from controllers.api.validation import validate_raycluster
from controllers.common import ray_version as rv
from controllers.raycluster.probes import supports_unified_health_check

SAMPLES = Path(__file__).resolve().parents[3] / "config" / "samples"
CLUSTER: dict[str, Any] = yaml.safe_load((SAMPLES / "ray-cluster.sample.yaml").read_text())
JOB: dict[str, Any] = next(
    d for d in yaml.safe_load_all((SAMPLES / "ray-job.sample.yaml").read_text()) if d["kind"] == "RayJob"
)

# input -> components, or the library's error message
GENERIC: list[tuple[str, tuple[int, ...] | str]] = [
    ("2.52", (2, 52)),
    ("2.52.0", (2, 52, 0)),
    ("v2.52", (2, 52)),
    ("2.52.0rc1", (2, 52, 0)),  # anything after the numbers is ignored
    ("2.52-dev", (2, 52)),
    ("2.52.0+build.5", (2, 52, 0)),
    ("2.52.0.1", (2, 52, 0, 1)),
    ("2.052", (2, 52)),  # only the first component may not have leading zeros
    (" \t2.52 ", (2, 52)),
    ("0.1", (0, 1)),
    ("2.x", 'illegal version string "2.x"'),
    ("2", 'illegal version string "2"'),
    ("02.52", 'illegal zero-prefixed version component "02" in "02.52"'),
    ("", 'could not parse "" as version'),
    ("latest", 'could not parse "latest" as version'),
    ("nightly", 'could not parse "nightly" as version'),
    ("V2.52", 'could not parse "V2.52" as version'),
    ("2.52\n", 'could not parse "2.52\\n" as version'),
    (
        "2.99999999999999999999",
        'illegal non-numeric version component "99999999999999999999" in "2.99999999999999999999": '
        'strconv.ParseUint: parsing "99999999999999999999": value out of range',
    ),
]


@pytest.mark.parametrize(("text", "expected"), GENERIC)
def test_parse_generic(text: str, expected: tuple[int, ...] | str) -> None:
    if isinstance(expected, tuple):
        assert rv.parse_ray_version(text).components == expected
    else:
        with pytest.raises(rv.RayVersionError) as err:
            rv.parse_ray_version(text)
        assert str(err.value) == expected


@pytest.mark.parametrize(
    ("a", "b", "order"),
    [
        ("2.52", "2.52.0", 0),  # missing components are zeros
        ("2.52", "2.52.0.0", 0),
        ("2.52.0.1", "2.52.0", 1),
        ("2.52.0rc1", "2.52.0", 0),  # no prerelease ordering in the generic rules
        ("2.9", "2.10", -1),  # numeric, not lexical
        ("3.0", "2.99.99", 1),
    ],
)
def test_compare_pads_missing_components(a: str, b: str, order: int) -> None:
    assert rv.parse_ray_version(a).compare(rv.parse_ray_version(b)) == order
    assert rv.parse_ray_version(b).compare(rv.parse_ray_version(a)) == -order


_UNSET = (
    "authOptions.mode is 'token' but RayVersion was not specified. Ray version 2.52.0 or later is required"
)
TOKEN_AUTH: list[tuple[str | None, str | None]] = [
    ("2.52", None),
    ("2.52.0", None),
    ("v2.52", None),
    ("2.52.0rc1", None),
    ("2.52-dev", None),
    ("2.60.0", None),
    ("2.51.9", "authOptions.mode is 'token' but minimum Ray version is 2.52.0, got 2.51.9"),
    ("2.5", "authOptions.mode is 'token' but minimum Ray version is 2.52.0, got 2.5"),
    ("", _UNSET),
    (None, _UNSET),
    (
        "latest",
        "authOptions.mode is 'token' but RayVersion format is invalid: latest, "
        'could not parse "latest" as version',
    ),
    (
        "nightly",
        "authOptions.mode is 'token' but RayVersion format is invalid: nightly, "
        'could not parse "nightly" as version',
    ),
]


@pytest.mark.parametrize(("text", "expected"), TOKEN_AUTH)
def test_token_auth_requirement(text: str | None, expected: str | None) -> None:
    assert rv.requirement_error(text, rv.TOKEN_AUTH, "authOptions.mode is 'token'") == expected


@pytest.mark.parametrize(
    ("text", "unified"),
    [
        ("2.53", True),
        ("2.53.0", True),
        ("v2.53", True),
        ("2.53.0rc1", True),
        ("2.53-dev", True),
        ("2.60.0", True),
        ("2.52", False),
        ("2.52.9", False),
        ("", False),  # unset or unparsable: treated as old, never an error
        (None, False),
        ("latest", False),
        ("nightly", False),
    ],
)
def test_unified_health_check_treats_unparsable_as_old(text: str | None, unified: bool) -> None:
    assert supports_unified_health_check(text) is unified


METADATA: list[tuple[str, bool | str]] = [
    ("2.6", True),
    ("2.6.0", True),
    ("v2.52", True),
    ("02.6.0", True),  # Masterminds coerces leading zeros
    ("2.52.0+build", True),
    ("2", False),  # 2.0.0
    ("2.5.9", False),
    ("2.52-dev", False),  # a prerelease never satisfies >= 2.6.0
    ("2.52.0-rc1", False),
    ("2.52.0rc1", "invalid semantic version"),  # unlike the generic rules
    ("2.52.0.1", "invalid semantic version"),
    ("latest", "invalid semantic version"),
    ("nightly", "invalid semantic version"),
    ("", "invalid semantic version"),
    ("2.6.0-01", "version segment starts with 0"),
]


@pytest.mark.parametrize(("text", "expected"), METADATA)
def test_job_metadata_uses_semver_rules(text: str, expected: bool | str) -> None:
    if isinstance(expected, bool):
        assert rv.supports_job_metadata(text) is expected
    else:
        with pytest.raises(rv.RayVersionError) as err:
            rv.supports_job_metadata(text)
        assert str(err.value) == expected


def _cluster(version: str | None, **auth: Any) -> dict[str, Any]:
    cluster = copy.deepcopy(CLUSTER)
    cluster["spec"]["authOptions"] = {"mode": "token", **auth}
    if version is None:
        cluster["spec"].pop("rayVersion", None)
    else:
        cluster["spec"]["rayVersion"] = version
    return cluster


@pytest.mark.parametrize(("text", "expected"), TOKEN_AUTH)
def test_validation_reports_token_auth_requirement(text: str | None, expected: str | None) -> None:
    errors = [(e.path, e.message) for e in validate_raycluster(_cluster(text))]
    assert errors == ([] if expected is None else [("spec.rayVersion", expected)])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2.55", None),
        ("2.55.0rc1", None),
        ("2.54.9", "authOptions.enableK8sTokenAuth is enabled but minimum Ray version is 2.55.0, got 2.54.9"),
    ],
)
def test_validation_reports_k8s_token_auth_requirement(text: str, expected: str | None) -> None:
    errors = [(e.path, e.message) for e in validate_raycluster(_cluster(text, enableK8sTokenAuth=True))]
    assert errors == ([] if expected is None else [("spec.authOptions.enableK8sTokenAuth", expected)])


def _priority_cluster(version: str | None, *, v2: bool) -> dict[str, Any]:
    cluster = copy.deepcopy(CLUSTER)
    spec = cluster["spec"]
    if version is None:
        spec.pop("rayVersion", None)
    else:
        spec["rayVersion"] = version
    spec["workerGroupSpecs"][0]["priority"] = 3
    if v2:
        spec["enableInTreeAutoscaling"] = True
        spec["autoscalerOptions"] = {"version": "v2"}
    return cluster


@pytest.mark.parametrize(
    ("text", "v2", "expected"),
    [
        ("2.56", True, None),
        ("2.56.0rc1", True, None),
        ("2.55.9", True, "worker group {g}: priority is set, but minimum Ray version is 2.56.0, got 2.55.9"),
        (
            None,
            True,
            "worker group {g}: priority is set, but RayVersion was not specified. "
            "Ray version 2.56.0 or later is required",
        ),
        (
            "latest",
            True,
            "worker group {g}: priority is set, but RayVersion format is invalid: latest, "
            'could not parse "latest" as version',
        ),
        (
            "2.56.0",
            False,
            "worker group {g}: priority is set to 3, but autoscaler v2 is not enabled. "
            "Priority is only supported with autoscaler v2 enabled",
        ),
    ],
)
def test_validation_reports_worker_group_priority(text: str | None, v2: bool, expected: str | None) -> None:
    cluster = _priority_cluster(text, v2=v2)
    group = cluster["spec"]["workerGroupSpecs"][0]["groupName"]
    errors = [(e.path, e.message) for e in validate_raycluster(cluster)]
    want = [] if expected is None else [("spec.workerGroupSpecs[0].priority", expected.format(g=group))]
    assert errors == want


def test_priority_zero_needs_nothing() -> None:
    cluster = _priority_cluster(None, v2=False)
    cluster["spec"]["workerGroupSpecs"][0]["priority"] = 0
    assert validate_raycluster(cluster) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2.6", None),
        ("2.52-dev", ("spec.metadata", "the Ray version must be at least 2.6.0 to use the metadata field")),
        (
            "2.52.0rc1",
            (
                "spec.rayClusterSpec.rayVersion",
                "failed to parse Ray version: 2.52.0rc1: invalid semantic version",
            ),
        ),
    ],
)
def test_job_validation_uses_the_metadata_rules(text: str, expected: tuple[str, str] | None) -> None:
    job = copy.deepcopy(JOB)
    job["spec"]["metadata"] = {"owner": "me"}
    job["spec"]["rayClusterSpec"]["rayVersion"] = text
    errors = [(e.path, e.message) for e in validate_rayjob(job)]
    assert errors == ([] if expected is None else [expected])
