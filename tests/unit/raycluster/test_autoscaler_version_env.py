"""``RAY_enable_autoscaler_v2`` as KubeRay v1.7.0 sets it (``DefaultHeadPodTemplate``).

Only the head's Ray container gets it, and only when ``autoscalerOptions.version`` says so:
``v2`` -> "true" (and ``restartPolicy: Never`` on every Pod), ``v1`` -> "false", unset ->
nothing. The autoscaler sidecar never gets it. The options below are those of v1.7.0's
``ray-cluster.autoscaler-v2.yaml`` and ``ray-cluster.autoscaler-v2-overwrite-cmd.yaml`` samples,
which no golden file covers; the expectations are derived from KubeRay's source.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.pod import build_head_pod, build_worker_pod
from tests.unit.raycluster.test_pod_builder import cluster

OPTS = RayClusterOptions()
V2_OPTIONS: dict[str, Any] = {
    "version": "v2",
    "upscalingMode": "Default",
    "idleTimeoutSeconds": 60,
    "imagePullPolicy": "IfNotPresent",
    "securityContext": {},
    "env": [],
    "envFrom": [],
    "resources": {
        "limits": {"cpu": "500m", "memory": "512Mi"},
        "requests": {"cpu": "500m", "memory": "512Mi"},
    },
}
OVERWRITE_CMD = {
    **V2_OPTIONS,
    "command": ["/bin/bash", "-lc", "--"],
    "args": ["echo 'Starting autoscaler...'; $KUBERAY_GEN_AUTOSCALER_START_CMD"],
}
AUTOSCALER_ENV = ["RAY_CLUSTER_NAME", "RAY_CLUSTER_NAMESPACE", "RAY_HEAD_POD_NAME", "KUBERAY_CRD_VER",
                  "KUBERAY_GEN_AUTOSCALER_START_CMD"]  # fmt: skip


def _autoscaling(
    options: dict[str, Any] | None, head_env: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    c = cluster()
    c["spec"]["enableInTreeAutoscaling"] = True
    if options is not None:
        c["spec"]["autoscalerOptions"] = copy.deepcopy(options)
    if head_env is not None:
        c["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"] = head_env
    return c


def _env(container: dict[str, Any], name: str) -> list[str]:
    return [str(e.get("value")) for e in container.get("env") or [] if e["name"] == name]


@pytest.mark.parametrize("options", [V2_OPTIONS, OVERWRITE_CMD], ids=["autoscaler-v2", "v2-overwrite-cmd"])
def test_v2_sets_the_env_on_the_ray_container_only(options: dict[str, Any]) -> None:
    c = _autoscaling(options)
    pod = build_head_pod(c, OPTS)
    ray, autoscaler = pod["spec"]["containers"]
    assert autoscaler["name"] == "autoscaler"
    assert [e["name"] for e in autoscaler["env"]] == AUTOSCALER_ENV
    assert _env(ray, "RAY_enable_autoscaler_v2") == ["true"]
    assert pod["spec"]["restartPolicy"] == "Never"
    worker = build_worker_pod(c, c["spec"]["workerGroupSpecs"][0], OPTS)
    assert worker["spec"]["restartPolicy"] == "Never"
    assert _env(worker["spec"]["containers"][0], "RAY_enable_autoscaler_v2") == []


def test_overwrite_cmd_sample_keeps_its_command_and_args() -> None:
    autoscaler = build_head_pod(_autoscaling(OVERWRITE_CMD), OPTS)["spec"]["containers"][1]
    assert (autoscaler["command"], autoscaler["args"]) == (OVERWRITE_CMD["command"], OVERWRITE_CMD["args"])


def test_explicit_v1_says_false_and_unset_says_nothing() -> None:
    pod = build_head_pod(_autoscaling({"version": "v1"}), OPTS)
    assert _env(pod["spec"]["containers"][0], "RAY_enable_autoscaler_v2") == ["false"]
    assert "restartPolicy" not in pod["spec"]
    pod = build_head_pod(_autoscaling({}), OPTS)
    assert _env(pod["spec"]["containers"][0], "RAY_enable_autoscaler_v2") == []
    assert [e["name"] for e in pod["spec"]["containers"][1]["env"]] == AUTOSCALER_ENV


def test_the_head_env_var_alone_is_the_users_and_changes_no_pod_field() -> None:
    """Pre-1.4 style: KubeRay builds Pods on ``autoscalerOptions.version`` only, so the user's
    env var stays the only one and no restartPolicy is forced."""
    c = _autoscaling(None, head_env=[{"name": "RAY_enable_autoscaler_v2", "value": "true"}])
    pod = build_head_pod(c, OPTS)
    assert _env(pod["spec"]["containers"][0], "RAY_enable_autoscaler_v2") == ["true"]
    assert "restartPolicy" not in pod["spec"]
    assert "restartPolicy" not in build_worker_pod(c, c["spec"]["workerGroupSpecs"][0], OPTS)["spec"]
