"""The history server collector sidecar and its validation.

Expected values derived from KubeRay v1.7.0's source (``common/pod.go`` ``BuildCollectorContainer``
and the Ray-event env of ``setContainerEnvVars``, ``utils/validation.go``
``validateCollectorOptions``); the sample is reproduced field by field by the golden test.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from controllers.api.gates import ClusterGates
from controllers.api.validation import validate_raycluster
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.pod import build_head_pod, build_worker_pod

ON = dataclasses.replace(RayClusterOptions(), gates=ClusterGates(history_server=True))
GCS = [{"name": "STORAGE_BACKEND", "value": "GCS"}, {"name": "GCS_BUCKET", "value": "b"}]


def cluster(collector: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": "c",
            "namespace": "ns",
            "uid": "u-1",
            "labels": {"ray.io/originated-from-crd": "RayJob", "ray.io/originated-from-cr-name": "job"},
        },
        "spec": {
            "rayVersion": "2.52.0",
            "historyServerOptions": {"collectorOptions": collector or {"image": "collector:1", "env": GCS}},
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {
                    "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}
                },
            },
            "workerGroupSpecs": [
                {
                    "groupName": "g",
                    "minReplicas": 0,
                    "maxReplicas": 1,
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [{"name": "w", "image": "rayproject/ray:2.52.0"}]}},
                }
            ],
            **spec,
        },
    }
    return body


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env") or []}


def test_head_collector_defaults_owner_and_dashboard_address() -> None:
    pod = build_head_pod(cluster(), ON)
    ray, collector = pod["spec"]["containers"]
    assert collector["name"] == "ray-history-collector"
    assert collector["image"] == "collector:1"
    assert collector["imagePullPolicy"] == "IfNotPresent"
    assert collector["resources"] == {
        "limits": {"cpu": "200m", "memory": "256Mi"},
        "requests": {"cpu": "50m", "memory": "64Mi"},
    }
    assert [e["name"] for e in collector["env"]] == [
        "POD_IP",
        "RAY_CLUSTER_NAME",
        "RAY_CLUSTER_NAMESPACE",
        "RAY_ROLE",
        "EVENTS_PORT",
        "FQ_RAY_IP",
        "OWNER_KIND",
        "OWNER_NAME",
        "RAY_DASHBOARD_ADDRESS",
        "STORAGE_BACKEND",
        "GCS_BUCKET",
    ]
    env = _env(collector)
    assert env["RAY_ROLE"] == "Head" and env["OWNER_KIND"] == "RayJob" and env["OWNER_NAME"] == "job"
    assert env["FQ_RAY_IP"] == "c-head-svc.ns.svc.cluster.local"
    assert env["RAY_DASHBOARD_ADDRESS"] == "http://localhost:8265"
    assert {"name": "ray-logs", "mountPath": "/tmp/ray"} in ray["volumeMounts"]
    assert {"name": "ray-logs", "mountPath": "/tmp/ray"} in collector["volumeMounts"]
    assert {"name": "ray-logs", "emptyDir": {}} in pod["spec"]["volumes"]
    ray_env = _env(ray)
    assert ray_env["RAY_enable_ray_event"] == "true"
    assert ray_env["RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR"] == "http://localhost:8084/v1/events"


def test_worker_collector_has_no_dashboard_address_and_users_settings_win() -> None:
    options = {
        "image": "collector:1",
        "imagePullPolicy": "Always",
        "resources": {"requests": {"cpu": "1"}},
        "env": GCS,
    }
    c = cluster(options)
    pod = build_worker_pod(c, c["spec"]["workerGroupSpecs"][0], ON)
    collector = pod["spec"]["containers"][1]
    assert collector["imagePullPolicy"] == "Always"
    assert collector["resources"] == {"requests": {"cpu": "1"}}
    env = _env(collector)
    assert env["RAY_ROLE"] == "Worker" and "RAY_DASHBOARD_ADDRESS" not in env


def test_a_given_dashboard_address_is_not_doubled() -> None:
    env = [*GCS, {"name": "RAY_DASHBOARD_ADDRESS", "value": "http://elsewhere:8265"}]
    collector = build_head_pod(cluster({"image": "x", "env": env}), ON)["spec"]["containers"][1]
    assert [e["value"] for e in collector["env"] if e["name"] == "RAY_DASHBOARD_ADDRESS"] == [
        "http://elsewhere:8265"
    ]


def test_autoscaler_and_collector_share_one_log_volume() -> None:
    pod = build_head_pod(cluster(enableInTreeAutoscaling=True), ON)
    names = [c["name"] for c in pod["spec"]["containers"]]
    assert names == ["ray-head", "autoscaler", "ray-history-collector"]
    assert [v["name"] for v in pod["spec"]["volumes"]].count("ray-logs") == 1


def test_token_auth_reaches_the_collector() -> None:
    pod = build_head_pod(cluster(authOptions={"mode": "token"}), ON)
    assert "RAY_AUTH_TOKEN" in _env(pod["spec"]["containers"][1])


def test_gate_off_the_builders_add_nothing() -> None:
    pod = build_head_pod(cluster(), RayClusterOptions())
    assert [c["name"] for c in pod["spec"]["containers"]] == ["ray-head"]
    assert "RAY_enable_ray_event" not in _env(pod["spec"]["containers"][0])


# -- validation ----------------------------------------------------------------------------------


def _messages(c: dict[str, Any], gates: ClusterGates = ClusterGates(history_server=True)) -> list[str]:
    return [e.message for e in validate_raycluster(c, gates=gates)]


def test_gate_off_is_an_invalid_spec() -> None:
    assert _messages(cluster(), ClusterGates()) == ["RayClusterHistoryServer feature gate is not enabled"]
    assert _messages(cluster()) == []


@pytest.mark.parametrize(
    ("collector", "message"),
    [
        ({"env": GCS}, "historyServerOptions.collectorOptions.image must be set"),
        (
            {"image": "x", "env": [*GCS, {"name": "POD_IP", "value": "1"}]},
            "historyServerOptions.collectorOptions.env must not contain POD_IP: it is managed by KubeRay and "
            "injected automatically into the collector container",
        ),
        (
            {"image": "x"},
            "STORAGE_BACKEND environment variable must be set with a literal string value in "
            "historyServerOptions.collectorOptions.env",
        ),
        (
            {"image": "x", "env": [{"name": "STORAGE_BACKEND", "value": "gcs"}]},
            "GCS_BUCKET environment variable must be set when STORAGE_BACKEND is GCS",
        ),
        (
            {"image": "x", "env": [{"name": "STORAGE_BACKEND", "value": "S3"}]},
            "S3_REGION environment variable must be set when STORAGE_BACKEND is S3",
        ),
        (
            {"image": "x", "env": [{"name": "STORAGE_BACKEND", "value": "AzureBlob"}]},
            "either AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT_URL environment variable "
            "must be set when STORAGE_BACKEND is AZUREBLOB",
        ),
        (
            {
                "image": "x",
                "env": [
                    {"name": "STORAGE_BACKEND", "value": "ALIYUNOSS"},
                    {"name": "OSS_BUCKET", "value": "b"},
                ],
            },
            "OSS_ENDPOINT environment variable must be set when STORAGE_BACKEND is ALIYUNOSS",
        ),
    ],
)
def test_collector_settings_are_checked(collector: dict[str, Any], message: str) -> None:
    assert _messages(cluster(collector)) == [message]


def test_collector_options_are_required_and_the_name_is_reserved() -> None:
    c = cluster()
    c["spec"]["historyServerOptions"] = {}
    assert _messages(c) == ["historyServerOptions.collectorOptions must be set"]
    c = cluster()
    c["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"].append(
        {"name": "ray-history-collector", "image": "x"}
    )
    assert _messages(c) == [
        "worker group g pod template must not define a container with name 'ray-history-collector' when "
        "history server collector options are enabled"
    ]
