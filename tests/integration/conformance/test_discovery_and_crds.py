"""Discovery documents, CRD lifecycle, and KubeRay's own CRDs and samples."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from kuberay_py.client import ApiError, Client
from kuberay_py.client import resources as r
from kuberay_py.envtest import Environment
from tests.crd_docs import crd_doc

from .helpers import wait_crd_gone

KUBERAY = Path(__file__).resolve().parents[2] / "fixtures" / "kuberay"  # KubeRay's own CRDs and samples


async def test_version_and_group_discovery(k8s: Client) -> None:
    version = await k8s.request("GET", "/version")
    assert version["major"] == "1" and version["gitVersion"].startswith("v1.")
    api = await k8s.request("GET", "/api")
    assert api["kind"] == "APIVersions" and api["versions"] == ["v1"]
    groups = await k8s.request("GET", "/apis")
    assert groups["kind"] == "APIGroupList"
    names = {g["name"] for g in groups["groups"]}
    assert {
        "apps",
        "batch",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "networking.k8s.io",
        "rbac.authorization.k8s.io",
        "apiextensions.k8s.io",
    } <= names
    batch = await k8s.request("GET", "/apis/batch")
    assert batch["kind"] == "APIGroup" and batch["preferredVersion"]["groupVersion"] == "batch/v1"


async def test_core_resource_list(k8s: Client) -> None:
    doc = await k8s.request("GET", "/api/v1")
    assert doc["kind"] == "APIResourceList" and doc["groupVersion"] == "v1"
    by_name = {res["name"]: res for res in doc["resources"]}
    for name in (
        "pods",
        "services",
        "endpoints",
        "configmaps",
        "secrets",
        "serviceaccounts",
        "events",
        "namespaces",
        "pods/status",
    ):
        assert name in by_name, name
    assert by_name["pods"]["kind"] == "Pod" and by_name["pods"]["namespaced"] is True
    assert set(by_name["pods"]["verbs"]) >= {
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    }
    assert set(by_name["pods/status"]["verbs"]) == {"get", "patch", "update"}
    assert by_name["namespaces"]["namespaced"] is False


async def test_crd_served_after_established_and_removed_on_delete(k8s: Client, envtest: Environment) -> None:
    schema = {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    version = {"name": "v1", "served": True, "storage": True, "schema": schema}
    crd = crd_doc("lifecycle.kuberay.io", "gadgets", "Gadget", [version], scope="Cluster")
    await envtest.install_crds([crd])
    got = await k8s.get(r.CRDS, "gadgets.lifecycle.kuberay.io")
    conds = {c["type"]: c["status"] for c in got["status"]["conditions"]}
    assert conds["Established"] == "True" and conds["NamesAccepted"] == "True"
    assert got["status"]["acceptedNames"]["singular"] == "gadget"
    doc = await k8s.request("GET", "/apis/lifecycle.kuberay.io/v1")
    assert [res["name"] for res in doc["resources"]] == ["gadgets"]
    await k8s.request(
        "POST",
        "/apis/lifecycle.kuberay.io/v1/gadgets",
        body={
            "apiVersion": "lifecycle.kuberay.io/v1",
            "kind": "Gadget",
            "metadata": {"name": "g1"},
            "anything": {"x": 1},
        },
    )
    await k8s.delete(r.CRDS, "gadgets.lifecycle.kuberay.io")
    await wait_crd_gone(k8s, "gadgets.lifecycle.kuberay.io")
    with pytest.raises(ApiError) as e:
        await k8s.request("GET", "/apis/lifecycle.kuberay.io/v1/gadgets")
    assert e.value.status == 404


@pytest.fixture(scope="module")
def samples() -> dict[str, dict[str, Any]]:
    out = {}
    for f in sorted((KUBERAY / "samples").glob("*.yaml")):
        for doc in yaml.load_all(f.read_text(), Loader=yaml.CSafeLoader):
            # RayJob/RayCronJob samples (some with only generateName) are the RayJob suite's.
            if isinstance(doc, dict) and doc.get("kind") in ("RayCluster", "RayService"):
                out[f"{f.name}:{doc['metadata']['name']}"] = doc
    return out


async def test_kuberay_crds_install_and_samples_apply(
    k8s: Client, envtest: Environment, namespace: str, samples: dict[str, dict[str, Any]]
) -> None:
    await envtest.install_crds([KUBERAY / "crd"])
    assert len(samples) >= 10
    for i, (key, doc) in enumerate(samples.items()):
        doc = {**doc, "metadata": {**doc["metadata"], "name": f"sample-{i}"}}
        plural = {"RayCluster": "rayclusters", "RayService": "rayservices"}[doc["kind"]]
        created = await k8s.request("POST", f"/apis/ray.io/v1/namespaces/{namespace}/{plural}", body=doc)
        assert created["metadata"]["generation"] == 1, key
        assert created["spec"]["headGroupSpec" if doc["kind"] == "RayCluster" else "rayClusterConfig"], key


async def test_kuberay_sample_with_misspelled_type_is_rejected(
    k8s: Client, envtest: Environment, namespace: str, samples: dict[str, dict[str, Any]]
) -> None:
    await envtest.install_crds([KUBERAY / "crd"])
    doc = copy.deepcopy(samples["ray-cluster.sample.yaml:raycluster-kuberay"])
    doc["metadata"]["name"] = "typo"
    doc["spec"]["workerGroupSpecs"][0]["replicas"] = "1"  # a string where the CRD says integer
    with pytest.raises(ApiError) as e:
        await k8s.request("POST", f"/apis/ray.io/v1/namespaces/{namespace}/rayclusters", body=doc)
    assert (e.value.status, e.value.reason) == (422, "Invalid")
    field = "spec.workerGroupSpecs[0].replicas"
    assert (
        f'{field}: Invalid value: "string": {field} in body must be of type integer: "string"'
        in e.value.message
    )
    assert e.value.message.startswith('RayCluster.ray.io "typo" is invalid')
