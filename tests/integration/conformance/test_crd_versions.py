"""CRD evolution: multiple served versions, schema updates, deletion waiting for CR finalizers."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

from kuberay_py.client import ApiError, Client
from kuberay_py.client import resources as r
from kuberay_py.envtest import Environment
from tests.crd_docs import crd_doc
from tests.polling import eventually

from .helpers import wait_crd_gone


def crd(group: str, versions: list[dict[str, Any]]) -> dict[str, Any]:
    return crd_doc(group, "things", "Thing", versions)


def version(name: str, *, storage: bool, props: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "served": True,
        "storage": storage,
        "schema": {
            "openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "properties": props}},
            }
        },
    }


async def test_two_served_versions_share_objects(k8s: Client, envtest: Environment, namespace: str) -> None:
    group = f"v.{namespace}.kuberay.io"
    props = {"size": {"type": "integer"}}
    await envtest.install_crds(
        [
            crd(
                group,
                [version("v1", storage=True, props=props), version("v1beta1", storage=False, props=props)],
            )
        ]
    )
    groups = await k8s.request("GET", f"/apis/{group}")
    assert groups["preferredVersion"]["version"] == "v1"
    assert [v["version"] for v in groups["versions"]] == ["v1", "v1beta1"]
    await k8s.request(
        "POST",
        f"/apis/{group}/v1beta1/namespaces/{namespace}/things",
        body={
            "apiVersion": f"{group}/v1beta1",
            "kind": "Thing",
            "metadata": {"name": "t"},
            "spec": {"size": 1},
        },
    )
    as_v1 = await k8s.request("GET", f"/apis/{group}/v1/namespaces/{namespace}/things/t")
    assert as_v1["apiVersion"] == f"{group}/v1" and as_v1["spec"] == {"size": 1}
    listed = await k8s.request("GET", f"/apis/{group}/v1beta1/namespaces/{namespace}/things")
    assert [i["apiVersion"] for i in listed["items"]] == [f"{group}/v1beta1"]
    await k8s.delete(r.CRDS, f"things.{group}")
    await wait_crd_gone(k8s, f"things.{group}")


async def test_schema_update_takes_effect(k8s: Client, envtest: Environment, namespace: str) -> None:
    group = f"s.{namespace}.kuberay.io"
    doc = crd(group, [version("v1", storage=True, props={"size": {"type": "integer"}})])
    await envtest.install_crds([doc])
    path = f"/apis/{group}/v1/namespaces/{namespace}/things"
    body = {
        "apiVersion": f"{group}/v1",
        "kind": "Thing",
        "metadata": {"name": "a"},
        "spec": {"size": 1, "color": "red"},
    }
    created = await k8s.request("POST", path, body=body)
    assert created["spec"] == {"size": 1}, "unknown field pruned under the first schema"
    updated = copy.deepcopy(doc)
    updated["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "color"
    ] = {"type": "string", "enum": ["red", "blue"]}
    await envtest.install_crds([updated])
    attempts = itertools.count()

    async def stored_color() -> dict[str, Any] | None:
        doc = await k8s.request("POST", path, body={**body, "metadata": {"name": f"b{next(attempts)}"}})
        return doc if doc["spec"].get("color") == "red" else None

    # kube-apiserver swaps the CR handler asynchronously after a CRD update
    created = await eventually(stored_color, "the updated schema keeps color", tolerate=())
    assert created["spec"] == {"size": 1, "color": "red"}
    with pytest.raises(ApiError) as e:
        await k8s.request("POST", path, body={**body, "metadata": {"name": "c"}, "spec": {"color": "green"}})
    assert e.value.status == 422
    await k8s.delete(r.CRDS, f"things.{group}")
    await wait_crd_gone(k8s, f"things.{group}")


async def test_crd_deletion_waits_for_custom_resource_finalizers(
    k8s: Client, envtest: Environment, namespace: str
) -> None:
    group = f"f.{namespace}.kuberay.io"
    name = f"things.{group}"
    await envtest.install_crds([crd(group, [version("v1", storage=True, props={})])])
    path = f"/apis/{group}/v1/namespaces/{namespace}/things"
    await k8s.request(
        "POST",
        path,
        body={
            "apiVersion": f"{group}/v1",
            "kind": "Thing",
            "metadata": {"name": "held", "finalizers": ["example.com/hold"]},
        },
    )
    await k8s.delete(r.CRDS, name)

    async def terminating() -> bool:
        held = await k8s.request("GET", f"{path}/held")
        return bool(held["metadata"].get("deletionTimestamp"))

    await eventually(terminating, "the CRD finalizer deletes its custom resources", tolerate=())
    with pytest.raises(ApiError) as e:
        await k8s.request(
            "POST", path, body={"apiVersion": f"{group}/v1", "kind": "Thing", "metadata": {"name": "late"}}
        )
    # apiextensions' forbidCreateAdmission: admission's Forbidden, before any validation.
    assert e.value.status == 403, "no new custom resources while the CRD is terminating"
    assert e.value.reason == "Forbidden"
    assert e.value.message == (
        f'things.{group} "late" is forbidden: '
        "create not allowed while custom resource definition is terminating"
    )
    assert e.value.details == {"name": "late", "group": group, "kind": "things"}
    with pytest.raises(ApiError) as e:  # a server-side apply that would create is refused too
        await k8s.request(
            "PATCH",
            f"{path}/applied",
            query={"fieldManager": "test"},
            body={"apiVersion": f"{group}/v1", "kind": "Thing", "metadata": {"name": "applied"}},
            content_type="application/apply-patch+yaml",
        )
    assert e.value.status == 403 and e.value.details["name"] == "applied"
    crd_now = await k8s.get(r.CRDS, name)
    assert "customresourcecleanup.apiextensions.k8s.io" in crd_now["metadata"]["finalizers"]
    terminating = {c["type"]: c["status"] for c in crd_now["status"]["conditions"]}
    assert terminating.get("Terminating") == "True"
    await k8s.request(
        "PATCH",
        f"{path}/held",
        body={"metadata": {"finalizers": None}},
        content_type="application/merge-patch+json",
    )
    await wait_crd_gone(k8s, name)
