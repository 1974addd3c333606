"""NewClusterWithIncrementalUpgrade: accepted behind its feature gate; options get KubeRay's messages."""

from __future__ import annotations

import argparse
import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.api.validation import validate_rayservice
from controllers.cli.flags import parse_feature_gates

SAMPLES = Path(__file__).resolve().parents[3] / "config" / "samples"
SERVICE: dict[str, Any] = yaml.safe_load((SAMPLES / "ray-service.sample.yaml").read_text())
OPTIONS = "spec.upgradeStrategy.clusterUpgradeOptions"


def incremental(**options: Any) -> dict[str, Any]:
    obj = copy.deepcopy(SERVICE)
    obj["spec"]["rayClusterConfig"]["enableInTreeAutoscaling"] = True
    strategy: dict[str, Any] = {"type": "NewClusterWithIncrementalUpgrade"}
    if options.pop("_no_options", False) is False:
        strategy["clusterUpgradeOptions"] = {
            "gatewayClassName": "istio",
            "stepSizePercent": 25,
            "intervalSeconds": 10,
            "maxSurgePercent": 50,
            **options,
        }
    obj["spec"]["upgradeStrategy"] = strategy
    return obj


def messages(obj: dict[str, Any], *, gate: bool = True) -> list[str]:
    return [f"{e.path}: {e.message}" for e in validate_rayservice(obj, incremental_upgrade=gate)]


def test_valid_incremental_spec_is_accepted() -> None:
    assert messages(incremental()) == []
    without_surge = incremental()
    del without_surge["spec"]["upgradeStrategy"]["clusterUpgradeOptions"]["maxSurgePercent"]
    assert messages(without_surge) == []  # the CRD default (100) applies


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"maxSurgePercent": 101}, f"{OPTIONS}.maxSurgePercent: maxSurgePercent must be between 0 and 100"),
        ({"maxSurgePercent": -1}, f"{OPTIONS}.maxSurgePercent: maxSurgePercent must be between 0 and 100"),
        ({"stepSizePercent": 101}, f"{OPTIONS}.stepSizePercent: stepSizePercent must be between 0 and 100"),
        ({"stepSizePercent": None}, f"{OPTIONS}.stepSizePercent: stepSizePercent must be between 0 and 100"),
        (
            {"stepSizePercent": 60},
            f"{OPTIONS}.stepSizePercent: stepSizePercent must be less than or equal to maxSurgePercent",
        ),
        ({"intervalSeconds": 0}, f"{OPTIONS}.intervalSeconds: intervalSeconds must be greater than 0"),
        ({"intervalSeconds": None}, f"{OPTIONS}.intervalSeconds: intervalSeconds must be greater than 0"),
        (
            {"gatewayClassName": ""},
            f"{OPTIONS}.gatewayClassName: gatewayClassName is required for NewClusterWithIncrementalUpgrade",
        ),
    ],
)
def test_bad_option_gets_kuberays_message(options: dict[str, Any], expected: str) -> None:
    obj = incremental(**options)
    opts = obj["spec"]["upgradeStrategy"]["clusterUpgradeOptions"]
    for key in [k for k, v in opts.items() if v is None]:
        del opts[key]
    # KubeRay stops at the first problem; we report all, in KubeRay's order, so the first is its message.
    assert messages(obj)[0] == expected


def test_missing_options_and_autoscaler() -> None:
    obj = incremental(_no_options=True)
    obj["spec"]["rayClusterConfig"]["enableInTreeAutoscaling"] = False
    assert messages(obj) == [
        "spec.rayClusterConfig.enableInTreeAutoscaling: Ray Autoscaler is required for "
        "NewClusterWithIncrementalUpgrade",
        f"{OPTIONS}: ClusterUpgradeOptions are required for NewClusterWithIncrementalUpgrade",
    ]


def test_unknown_type_lists_all_three_options() -> None:
    obj = copy.deepcopy(SERVICE)
    obj["spec"]["upgradeStrategy"] = {"type": "Blue"}
    assert messages(obj) == [
        "spec.upgradeStrategy.type: Spec.UpgradeStrategy.Type value Blue is invalid, valid options are "
        "NewClusterWithIncrementalUpgrade, NewCluster, or None"
    ]
    assert messages(obj, gate=False) == messages(obj)  # the type check does not depend on the gate


def test_gate_off_skips_the_incremental_rules() -> None:
    """With the gate off the type behaves like None (KubeRay), so its options are not checked."""
    obj = incremental(_no_options=True)
    assert messages(obj, gate=False) == []


def test_feature_gates_flag() -> None:
    assert parse_feature_gates("")["RayServiceIncrementalUpgrade"] is True  # beta, on by default
    assert parse_feature_gates("RayServiceIncrementalUpgrade=false")["RayServiceIncrementalUpgrade"] is False
    with pytest.raises(argparse.ArgumentTypeError, match="unrecognized feature gate: Nope"):
        parse_feature_gates("Nope=true")
