"""LIST: kinds, label/field selectors with kube's grammar, limit/continue paging."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client as k
from kubernetes_asyncio.client.rest import ApiException

from kuberay_py.client import Client
from kuberay_py.client import resources as r

from .conftest import WIDGET
from .helpers import assert_status, configmap, pod


async def _names(core: k.CoreV1Api, ns: str, **kw: object) -> list[str]:
    lst = await core.list_namespaced_config_map(ns, **kw)
    return sorted(i.metadata.name for i in lst.items)


@pytest.fixture
async def labelled(core: k.CoreV1Api, namespace: str) -> str:
    await core.create_namespaced_config_map(namespace, configmap("a", labels={"app": "x", "tier": "web"}))
    await core.create_namespaced_config_map(namespace, configmap("b", labels={"app": "y", "tier": "db"}))
    await core.create_namespaced_config_map(namespace, configmap("c", labels={"app": "z"}))
    return namespace


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=x", ["a"]),
        ("app==x", ["a"]),
        ("app!=x", ["b", "c"]),
        ("app in (x, y)", ["a", "b"]),
        ("app notin (x,y)", ["c"]),
        ("tier", ["a", "b"]),
        ("!tier", ["c"]),
        ("app in (x,y),tier=db", ["b"]),
        ("tier!=web", ["b", "c"]),
    ],
)
async def test_label_selectors(core: k.CoreV1Api, labelled: str, selector: str, expected: list[str]) -> None:
    assert await _names(core, labelled, label_selector=selector) == expected


async def test_bad_label_selector_is_bad_request(core: k.CoreV1Api, labelled: str) -> None:
    with pytest.raises(ApiException) as e:
        await core.list_namespaced_config_map(labelled, label_selector="app in x")
    assert_status(e.value, 400, "BadRequest")


async def test_field_selectors(core: k.CoreV1Api, labelled: str) -> None:
    assert await _names(core, labelled, field_selector="metadata.name=b") == ["b"]
    assert await _names(core, labelled, field_selector="metadata.name!=b") == ["a", "c"]
    assert await _names(core, labelled, field_selector=f"metadata.namespace={labelled}") == ["a", "b", "c"]


async def test_pod_status_phase_field_selector(core: k.CoreV1Api, namespace: str) -> None:
    await core.create_namespaced_pod(namespace, pod("p1"))
    pending = await core.list_namespaced_pod(namespace, field_selector="status.phase=Pending")
    running = await core.list_namespaced_pod(namespace, field_selector="status.phase=Running")
    assert [p.metadata.name for p in pending.items] == ["p1"]
    assert running.items == []


async def test_unknown_field_selector_is_bad_request(core: k.CoreV1Api, labelled: str) -> None:
    with pytest.raises(ApiException) as e:
        await core.list_namespaced_config_map(labelled, field_selector="spec.nothing=x")
    assert_status(e.value, 400, "BadRequest")


async def test_limit_and_continue(core: k.CoreV1Api, namespace: str) -> None:
    for i in range(7):
        await core.create_namespaced_config_map(namespace, configmap(f"page-{i}"))
    seen: list[str] = []
    token = None
    pages = 0
    while True:
        lst = await core.list_namespaced_config_map(namespace, limit=3, _continue=token)
        pages += 1
        seen += [i.metadata.name for i in lst.items]
        assert len(lst.items) <= 3
        token = lst.metadata._continue
        if not token:
            break
        assert lst.metadata.remaining_item_count == 7 - len(seen)
    assert pages == 3
    assert seen == sorted(f"page-{i}" for i in range(7))


async def test_list_metadata(core: k.CoreV1Api, namespace: str) -> None:
    lst = await core.list_namespaced_config_map(namespace, _preload_content=False)
    body = await lst.json()
    assert body["kind"] == "ConfigMapList"
    assert body["apiVersion"] == "v1"
    assert int(body["metadata"]["resourceVersion"]) > 0
    assert body["items"] == []


async def test_list_across_namespaces(core: k.CoreV1Api, namespace: str) -> None:
    await core.create_namespaced_config_map(namespace, configmap("everywhere", labels={"probe": namespace}))
    lst = await core.list_config_map_for_all_namespaces(label_selector=f"probe={namespace}")
    assert [(i.metadata.namespace, i.metadata.name) for i in lst.items] == [(namespace, "everywhere")]


async def test_continue_pages_are_a_consistent_snapshot(core: k.CoreV1Api, namespace: str) -> None:
    """Like etcd: later pages show the objects as of the first page's resourceVersion."""
    for i in range(4):
        await core.create_namespaced_config_map(namespace, configmap(f"snap-{i}", {"v": "old"}))
    first = await core.list_namespaced_config_map(namespace, limit=2)
    assert [i.metadata.name for i in first.items] == ["snap-0", "snap-1"]
    # changes after the first page: a later object is modified, one deleted, one added
    await core.patch_namespaced_config_map("snap-2", namespace, {"data": {"v": "new"}})
    await core.delete_namespaced_config_map("snap-3", namespace)
    await core.create_namespaced_config_map(namespace, configmap("snap-4", {"v": "new"}))
    rest = await core.list_namespaced_config_map(namespace, limit=10, _continue=first.metadata._continue)
    assert [(i.metadata.name, i.data["v"]) for i in rest.items] == [("snap-2", "old"), ("snap-3", "old")]
    assert rest.metadata.resource_version == first.metadata.resource_version


async def test_items_of_a_built_in_list_carry_no_kind_but_custom_resources_do(
    k8s: Client, namespace: str, widget_crd: str
) -> None:
    """kube-apiserver encodes typed lists with apiVersion/kind on the list only; custom resources
    are unstructured and keep theirs. Our client fills them in, as client-go's unstructured
    decoding does, so cached objects always say what they are."""
    await k8s.create(r.CONFIGMAPS, configmap("listed"), namespace)
    raw = await k8s.request("GET", f"/api/v1/namespaces/{namespace}/configmaps")
    assert (raw["apiVersion"], raw["kind"]) == ("v1", "ConfigMapList")
    (item,) = [i for i in raw["items"] if i["metadata"]["name"] == "listed"]
    assert "apiVersion" not in item and "kind" not in item
    typed = await k8s.list(r.CONFIGMAPS, namespace)
    assert {(i["apiVersion"], i["kind"]) for i in typed["items"]} == {("v1", "ConfigMap")}

    group, version, plural = WIDGET
    path = f"/apis/{group}/{version}/namespaces/{namespace}/{plural}"
    await k8s.request(
        "POST",
        path,
        body={
            "apiVersion": f"{group}/{version}",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"size": 1},
        },
    )
    (widget,) = (await k8s.request("GET", path))["items"]
    assert (widget["apiVersion"], widget["kind"]) == (f"{group}/{version}", "Widget")
