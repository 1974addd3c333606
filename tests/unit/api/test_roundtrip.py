"""Every KubeRay sample loads into the models and dumps back unchanged, key order included."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from controllers.api import (
    RayCluster,
    RayService,
    WorkerGroupSpec,
    load_raycluster,
    load_rayservice,
)

ROOT = Path(__file__).resolve().parents[3]
REFERENCE_SAMPLES = ROOT / "tests" / "fixtures" / "kuberay" / "samples"
OUR_SAMPLES = ROOT / "config" / "samples"


def _docs(kind: str) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for directory in (REFERENCE_SAMPLES, OUR_SAMPLES):
        for path in sorted(directory.glob("*.yaml")):
            for doc in yaml.safe_load_all(path.read_text()):
                if isinstance(doc, dict) and doc.get("kind") == kind:
                    out.append((f"{directory.name}/{path.name}", doc))
    return out


CLUSTERS = _docs("RayCluster")
SERVICES = _docs("RayService")


def test_samples_are_present() -> None:
    # Five RayCluster and five RayService samples upstream, one of each in config/samples.
    assert len(CLUSTERS) >= 6 and len(SERVICES) >= 6


@pytest.mark.parametrize(("name", "doc"), CLUSTERS, ids=[n for n, _ in CLUSTERS])
def test_raycluster_sample_round_trips(name: str, doc: dict[str, Any]) -> None:
    original = copy.deepcopy(doc)
    out = load_raycluster(doc).to_dict()
    assert out == original
    assert list(out["spec"]) == list(original["spec"])
    assert doc == original  # loading never mutates its input


@pytest.mark.parametrize(("name", "doc"), SERVICES, ids=[n for n, _ in SERVICES])
def test_rayservice_sample_round_trips(name: str, doc: dict[str, Any]) -> None:
    original = copy.deepcopy(doc)
    svc = load_rayservice(doc)
    assert svc.to_dict() == original
    assert svc.spec is not None and svc.spec.ray_cluster_config is not None
    assert svc.spec.serve_applications(), "every RayService sample has applications"


def test_unknown_fields_survive_at_every_level() -> None:
    doc = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "x", "futureMeta": 1},
        "futureTop": {"a": [1, 2]},
        "spec": {
            "futureSpecField": True,
            "headGroupSpec": {
                "futureHeadField": "v",
                "template": {"spec": {"containers": [{"name": "ray-head", "futureContainerField": 3}]}},
            },
            "workerGroupSpecs": [{"groupName": "g", "scaleStrategy": {"futureScale": []}}],
        },
        "status": {"head": {"futureHeadStatus": "1"}, "futureStatus": None},
    }
    assert load_raycluster(copy.deepcopy(doc)).to_dict() == doc


def test_explicit_nulls_round_trip() -> None:
    doc = {"spec": {"headGroupSpec": {"rayStartParams": None}}, "status": {"lastUpdateTime": None}}
    assert load_raycluster(doc).to_dict() == doc


def test_typed_access_and_mutation_show_up_in_the_dump() -> None:
    rc = load_raycluster(CLUSTERS[0][1])
    assert isinstance(rc, RayCluster) and rc.spec is not None
    group = (rc.spec.worker_group_specs or [])[0]
    group.replicas = 3
    assert rc.to_dict()["spec"]["workerGroupSpecs"][0]["replicas"] == 3


def test_models_build_from_python_names() -> None:
    group = WorkerGroupSpec(group_name="g", min_replicas=0, max_replicas=2, ray_start_params={})
    assert group.to_dict() == {"groupName": "g", "minReplicas": 0, "maxReplicas": 2, "rayStartParams": {}}


@pytest.mark.parametrize(
    ("doc", "where"),
    [
        ({"spec": {"workerGroupSpecs": [{"replicas": "3"}]}}, "spec.workerGroupSpecs.0.replicas"),
        ({"spec": {"suspend": "true"}}, "spec.suspend"),
        (
            {"spec": {"headGroupSpec": {"rayStartParams": {"num-cpus": 1}}}},
            "spec.headGroupSpec.rayStartParams",
        ),
        ({"spec": {"upgradeStrategy": {"type": "Rolling"}}}, "spec.upgradeStrategy.type"),
        ({"spec": []}, "spec"),
    ],
)
def test_type_errors_name_the_field(doc: dict[str, Any], where: str) -> None:
    with pytest.raises(ValidationError) as info:
        load_raycluster(doc)
    assert where in str(info.value)


def test_rayservice_status_holds_a_full_cluster_status() -> None:
    doc = {
        "status": {
            "activeServiceStatus": {
                "rayClusterName": "c",
                "rayClusterStatus": {"desiredCPU": "2", "head": {"podIP": "10.0.0.1"}},
                "applicationStatuses": {"app": {"status": "RUNNING", "serveDeploymentStatuses": {"d": {}}}},
            },
            "numServeEndpoints": 2,
        }
    }
    svc = RayService.from_dict(doc)
    assert svc.status is not None and svc.status.active_service_status is not None
    cluster_status = svc.status.active_service_status.ray_cluster_status
    assert cluster_status is not None and cluster_status.desired_cpu == "2"
    assert cluster_status.head is not None and cluster_status.head.pod_ip == "10.0.0.1"
    assert svc.to_dict() == doc
