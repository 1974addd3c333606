"""Which checks count autoscaler v2 as on, as KubeRay v1.7.0's ValidateRayClusterSpec does.

``restartPolicy`` must be Never only with autoscaling on and ``autoscalerOptions.version: v2``;
``idleTimeoutSeconds`` also accepts the pre-1.4 head env var ``RAY_enable_autoscaler_v2``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from controllers.api.validation import validate_raycluster

SAMPLES = Path(__file__).resolve().parents[3] / "config" / "samples"
CLUSTER: dict[str, Any] = yaml.safe_load((SAMPLES / "ray-cluster.sample.yaml").read_text())


def _cluster(
    *, autoscaling: bool, version: str | None, env: str | None, policy: str | None
) -> dict[str, Any]:
    c = copy.deepcopy(CLUSTER)
    spec = c["spec"]
    spec["enableInTreeAutoscaling"] = autoscaling
    if version is not None:
        spec["autoscalerOptions"] = {"version": version}
    if env is not None:
        spec["headGroupSpec"]["template"]["spec"]["containers"][0]["env"] = [
            {"name": "RAY_enable_autoscaler_v2", "value": env}
        ]
    if policy is not None:
        spec["headGroupSpec"]["template"]["spec"]["restartPolicy"] = policy
        spec["workerGroupSpecs"][0]["template"]["spec"]["restartPolicy"] = policy
    return c


def _paths(c: dict[str, Any]) -> list[str]:
    return [e.path for e in validate_raycluster(c)]


def test_restart_policy_is_checked_for_version_v2_with_autoscaling_only() -> None:
    assert _paths(_cluster(autoscaling=True, version="v2", env=None, policy="Always")) == [
        "spec.workerGroupSpecs[0].template.spec.restartPolicy",
        "spec.headGroupSpec.template.spec.restartPolicy",
    ]
    assert _paths(_cluster(autoscaling=True, version=None, env="true", policy="Always")) == []
    assert _paths(_cluster(autoscaling=False, version="v2", env=None, policy="Always")) == []


def test_idle_timeout_accepts_the_version_or_the_env_var() -> None:
    for version, env in (("v2", None), (None, "true"), (None, "1")):
        c = _cluster(autoscaling=True, version=version, env=env, policy=None)
        c["spec"]["workerGroupSpecs"][0]["idleTimeoutSeconds"] = 30
        assert _paths(c) == [], (version, env)
    c = _cluster(autoscaling=True, version=None, env="True", policy=None)  # exactly "1" or "true"
    c["spec"]["workerGroupSpecs"][0]["idleTimeoutSeconds"] = 30
    assert _paths(c) == ["spec.workerGroupSpecs[0].idleTimeoutSeconds"]
