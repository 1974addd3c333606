"""Group-level ``resources`` and ``labels`` folded into ``ray start`` as KubeRay v1.7.0 does.

The expected strings are KubeRay's (``updateRayStartParamsResources``,
``updateRayStartParamsLabels``, ``generateRayStartCommand`` in ray-operator/controllers/ray/common),
down to the quoting of ``--resources`` and the sorted, unquoted ``--labels``.
"""

from __future__ import annotations

from typing import Any

import pytest

from controllers.raycluster.command import (
    fold_group_labels,
    fold_group_resources,
    generate_ray_start_command,
    go_float,
)
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.pod import build_head_pod, build_worker_pod

OPTS = RayClusterOptions()


@pytest.mark.parametrize(
    ("params", "resources", "expected"),
    [
        ({"existing": "true"}, None, {"existing": "true"}),
        ({}, {"cpu": "2", "memory": "4Gi"}, {"num-cpus": "2", "memory": "4294967296"}),
        ({}, {"CPU": "2", "GPU": "4"}, {"num-cpus": "2", "num-gpus": "4"}),
        ({}, {"nvidia.com/gpu": "1", "TPU": "4"}, {"num-gpus": "1", "resources": "'{\"TPU\":4}'"}),
        (
            {"num-cpus": "1", "memory": "1000", "resources": "'{\"Custom-Resource\": 10}'"},
            {"cpu": "4", "Custom-Resource": "5"},
            {"num-cpus": "4", "memory": "1000", "resources": "'{\"Custom-Resource\":5}'"},
        ),
        # Value() rounds up; custom resources keep their fraction; bad quantities are skipped.
        (
            {},
            {"CPU": "500m", "Memory": "1.5Gi", "custom": "250m", "big": "1e21", "bad": "lots"},
            {
                "num-cpus": "1",
                "memory": "1610612736",
                "resources": '\'{"big":1e+21,"custom":0.25}\'',
            },
        ),
        ({}, {"nvidia.com/mig-2g.32gb": "2"}, {"num-gpus": "2"}),
    ],
)
def test_group_resources_fold_into_params(
    params: dict[str, str], resources: dict[str, str] | None, expected: dict[str, str]
) -> None:
    fold_group_resources(params, resources)
    assert params == expected


@pytest.mark.parametrize(
    ("params", "labels", "expected"),
    [
        (
            {},
            {
                "topology.kubernetes.io/zone": "us-central2",
                "ray.io/node-group": "worker-group-1",
                "cloud.google.com/gke-spot": "true",
            },
            {
                "labels": "cloud.google.com/gke-spot=true,ray.io/node-group=worker-group-1,"
                "topology.kubernetes.io/zone=us-central2"
            },
        ),
        (
            {"labels": "old=label,to-be=replaced", "resources": "some-resources"},
            {"new": "label"},
            {"labels": "new=label", "resources": "some-resources"},
        ),
        ({"labels": "some=labels"}, None, {"labels": "some=labels"}),
        ({"labels": "some=labels"}, {}, {"labels": "some=labels"}),
    ],
)
def test_group_labels_fold_into_params(
    params: dict[str, str], labels: dict[str, str] | None, expected: dict[str, str]
) -> None:
    fold_group_labels(params, labels)
    assert params == expected


@pytest.mark.parametrize(
    ("node_type", "params", "limits", "expected"),
    [
        ("worker", {}, {"nvidia.com/gpu": "1"}, "ray start  --num-gpus=1 "),
        ("worker", {}, {"nvidia.com/mig-2g.32gb": "1"}, "ray start  --num-gpus=1 "),
        ("worker", {}, {"google.com/tpu": "4"}, "ray start  --resources='{\"TPU\":4}' "),
        (
            "head",
            {},
            {"aws.amazon.com/neuroncore": "4"},
            "ray start --head  --resources='{\"neuron_cores\":4}' ",
        ),
        (
            "head",
            {},
            {"google.com/tpu": "8", "aws.amazon.com/neuroncore": "4", "nvidia.com/gpu": "1"},
            "ray start --head  --num-gpus=1  --resources='{\"neuron_cores\":4}' ",
        ),
        (
            "head",
            {"resources": '"{"custom_resource":2}"'},
            {"aws.amazon.com/neuroncore": "4"},
            'ray start --head  --resources=\'{"custom_resource":2,"neuron_cores":4}\' ',
        ),
        (
            "head",
            {"resources": '\'{"custom_resource":2,"TPU":4}\''},
            {"google.com/tpu": "8"},
            'ray start --head  --resources=\'{"custom_resource":2,"TPU":4}\' ',
        ),
        # An unparsable resources param stops accelerator inference altogether, GPUs included.
        (
            "head",
            {"resources": "{"},
            {"aws.amazon.com/neuroncore": "4", "nvidia.com/gpu": "1"},
            "ray start --head  --resources={ ",
        ),
    ],
)
def test_accelerators_merge_into_the_resources_param(
    node_type: str, params: dict[str, str], limits: dict[str, str], expected: str
) -> None:
    assert generate_ray_start_command(node_type, params, {"limits": limits}) == expected


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (4.0, "4"),
        (0.25, "0.25"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1e-7, "1e-7"),
        (0.000001, "0.000001"),
        (1.5e-7, "1.5e-7"),
        (0.0, "0"),
        (0.1, "0.1"),
    ],
)
def test_go_float(value: float, text: str) -> None:
    assert go_float(value) == text


def _label_selector_cluster() -> dict[str, Any]:
    """KubeRay's ray-cluster-label-selector.yaml sample (v1.7.0), the parts that matter here."""

    def template(name: str, limits: dict[str, str]) -> dict[str, Any]:
        return {
            "spec": {
                "containers": [
                    {
                        "name": name,
                        "image": "rayproject/ray:nightly",
                        "resources": {"limits": limits, "requests": limits},
                    }
                ]
            }
        }

    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "ray-label-cluster", "namespace": "ns", "uid": "uid-1", "generation": 1},
        "spec": {
            "enableInTreeAutoscaling": True,
            "autoscalerOptions": {"version": "v2"},
            "headGroupSpec": {
                "labels": {"ray.io/region": "us-central2"},
                "resources": {"CPU": "0"},
                "rayStartParams": {},
                "template": template("ray-head", {"cpu": "1", "memory": "5Gi"}),
            },
            "workerGroupSpecs": [
                {
                    "replicas": 1,
                    "minReplicas": 1,
                    "maxReplicas": 10,
                    "groupName": "large-cpu-group",
                    "labels": {"cpu-family": "intel", "ray.io/market-type": "on-demand"},
                    "rayStartParams": {},
                    "template": template("ray-worker", {"cpu": "2", "memory": "4Gi"}),
                },
                {
                    "replicas": 0,
                    "minReplicas": 0,
                    "maxReplicas": 10,
                    "groupName": "accelerator-group",
                    "labels": {
                        "ray.io/accelerator-type": "A100",
                        "ray.io/market-type": "on-demand",
                        "ray.io/region": "us-central2",
                    },
                    "resources": {"GPU": "1"},
                    "rayStartParams": {},
                    "template": template("ray-worker", {"cpu": "1", "memory": "1Gi"}),
                },
            ],
        },
    }


def _gen_cmd(pod: dict[str, Any]) -> str:
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    return str(env["KUBERAY_GEN_RAY_START_CMD"])


def test_label_selector_sample_head_command_and_labels() -> None:
    pod = build_head_pod(_label_selector_cluster(), OPTS)
    assert _gen_cmd(pod) == (
        "ray start --head  --block  --dashboard-agent-listen-port=52365  --dashboard-host=0.0.0.0 "
        " --labels=ray.io/region=us-central2  --memory=5368709120  --metrics-export-port=8080 "
        " --no-monitor  --num-cpus=0 "
    )
    assert pod["metadata"]["labels"]["ray.io/region"] == "us-central2"
    assert _gen_cmd(pod) in pod["spec"]["containers"][0]["args"][0]


def test_label_selector_sample_worker_commands_and_labels() -> None:
    cluster = _label_selector_cluster()
    address = "ray-label-cluster-head-svc.ns.svc.cluster.local:6379"
    cpu, gpu = cluster["spec"]["workerGroupSpecs"]
    pod = build_worker_pod(cluster, cpu, OPTS)
    assert _gen_cmd(pod) == (
        f"ray start  --address={address}  --block  --dashboard-agent-listen-port=52365 "
        " --labels=cpu-family=intel,ray.io/market-type=on-demand  --memory=4294967296 "
        " --metrics-export-port=8080  --num-cpus=2 "
    )
    assert {k: pod["metadata"]["labels"][k] for k in ("cpu-family", "ray.io/market-type")} == {
        "cpu-family": "intel",
        "ray.io/market-type": "on-demand",
    }
    pod = build_worker_pod(cluster, gpu, OPTS)
    assert _gen_cmd(pod) == (
        f"ray start  --address={address}  --block  --dashboard-agent-listen-port=52365 "
        " --labels=ray.io/accelerator-type=A100,ray.io/market-type=on-demand,ray.io/region=us-central2 "
        " --memory=1073741824  --metrics-export-port=8080  --num-cpus=1  --num-gpus=1 "
    )


def test_group_labels_override_template_labels_but_never_the_selector_labels() -> None:
    cluster = _label_selector_cluster()
    group = cluster["spec"]["workerGroupSpecs"][0]
    group["template"]["metadata"] = {"labels": {"cpu-family": "from-template", "team": "a"}}
    group["labels"] = {"cpu-family": "intel", "ray.io/cluster": "hijack", "ray.io/group": "hijack"}
    labels = build_worker_pod(cluster, group, OPTS)["metadata"]["labels"]
    assert (labels["cpu-family"], labels["team"]) == ("intel", "a")
    assert (labels["ray.io/cluster"], labels["ray.io/group"]) == ("ray-label-cluster", "large-cpu-group")
    assert "--labels=cpu-family=intel,ray.io/cluster=hijack,ray.io/group=hijack " in _gen_cmd(
        build_worker_pod(cluster, group, OPTS)
    )
