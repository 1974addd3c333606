"""WATCH: replay from a resourceVersion, selector transitions, timeouts, bookmarks, 410 Expired."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from kubernetes_asyncio import client as k

from .helpers import configmap


async def _watch(core: k.CoreV1Api, ns: str, **params: Any) -> list[dict[str, Any]]:
    """A raw watch (kubernetes_asyncio's Watch retries 410s); returns all events until the stream ends."""
    resp = await core.list_namespaced_config_map(ns, watch=True, _preload_content=False, **params)
    events = []
    try:
        assert resp.status == 200
        async for line in resp.content:
            if line.strip():
                events.append(json.loads(line))
    finally:
        resp.release()
    return events


async def test_watch_from_resource_version_replays_later_events(core: k.CoreV1Api, namespace: str) -> None:
    a = await core.create_namespaced_config_map(namespace, configmap("w-a"))
    rv = a.metadata.resource_version
    await core.create_namespaced_config_map(namespace, configmap("w-b"))
    body = configmap("w-a", {"k": "v"})
    await core.replace_namespaced_config_map("w-a", namespace, body)
    await core.delete_namespaced_config_map("w-b", namespace)
    events = await _watch(core, namespace, resource_version=rv, timeout_seconds=1)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "w-b"),
        ("MODIFIED", "w-a"),
        ("DELETED", "w-b"),
    ]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and rvs[0] > int(rv)


async def test_watch_without_resource_version_starts_with_current_state(
    core: k.CoreV1Api, namespace: str
) -> None:
    await core.create_namespaced_config_map(namespace, configmap("s-1"))
    await core.create_namespaced_config_map(namespace, configmap("s-2"))
    events = await _watch(core, namespace, timeout_seconds=1)
    assert sorted((e["type"], e["object"]["metadata"]["name"]) for e in events) == [
        ("ADDED", "s-1"),
        ("ADDED", "s-2"),
    ]


async def test_label_selector_transitions(core: k.CoreV1Api, namespace: str) -> None:
    cm = await core.create_namespaced_config_map(namespace, configmap("t", labels={"pick": "no"}))
    rv = cm.metadata.resource_version
    await core.patch_namespaced_config_map("t", namespace, {"metadata": {"labels": {"pick": "yes"}}})
    await core.patch_namespaced_config_map("t", namespace, {"data": {"a": "b"}})
    await core.patch_namespaced_config_map("t", namespace, {"metadata": {"labels": {"pick": "no"}}})
    events = await _watch(core, namespace, resource_version=rv, timeout_seconds=1, label_selector="pick=yes")
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    # leaving the selector: the last state that matched, stamped with the new version
    assert events[2]["object"]["metadata"]["labels"] == {"pick": "yes"}
    assert int(events[2]["object"]["metadata"]["resourceVersion"]) > int(
        events[1]["object"]["metadata"]["resourceVersion"]
    )


async def test_send_initial_events_ends_with_annotated_bookmark(core: k.CoreV1Api, namespace: str) -> None:
    await core.create_namespaced_config_map(namespace, configmap("ie"))
    resp = await core.api_client.call_api(
        f"/api/v1/namespaces/{namespace}/configmaps",
        "GET",
        query_params=[
            ("watch", "true"),
            ("sendInitialEvents", "true"),
            ("resourceVersionMatch", "NotOlderThan"),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", "1"),
        ],
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
        _preload_content=False,
    )
    events = []
    try:
        async for line in resp.content:
            if line.strip():
                events.append(json.loads(line))
    finally:
        resp.release()
    assert events[0]["type"] == "ADDED" and events[0]["object"]["metadata"]["name"] == "ie"
    bookmark = events[1]
    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


async def _watch_lines(core: k.CoreV1Api, namespace: str, query: list[tuple[str, str]]) -> list[Any]:
    """One bounded GET (``timeoutSeconds=1`` ends an accepted watch): its lines, or the API error."""
    resp = await core.api_client.call_api(
        f"/api/v1/namespaces/{namespace}/configmaps",
        "GET",
        query_params=[*query, ("timeoutSeconds", "1")],
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
        _preload_content=False,
    )
    try:
        async with asyncio.timeout(30):
            body = await resp.read()
    finally:
        resp.release()
    if resp.status >= 400:
        return [resp.status, json.loads(body)]
    return [json.loads(line) for line in body.splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            [("watch", "true"), ("sendInitialEvents", "true"), ("allowWatchBookmarks", "true")],
            "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to "
            "NotOlderThan",
        ),
        (
            [("watch", "true"), ("resourceVersionMatch", "NotOlderThan")],
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless "
            "sendInitialEvents is provided",
        ),
        (
            [
                ("sendInitialEvents", "true"),
                ("resourceVersionMatch", "NotOlderThan"),
                ("resourceVersion", "1"),
            ],
            "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list",
        ),
    ],
)
async def test_send_initial_events_needs_a_watch_with_not_older_than(
    core: k.CoreV1Api, namespace: str, query: list[tuple[str, str]], message: str
) -> None:
    """apimachinery's ValidateListOptions (WatchList on): every bad combination is a 422."""
    got = await _watch_lines(core, namespace, query)
    assert got[0] == 422, got
    status = got[1]
    assert status["reason"] == "Invalid"
    assert status["message"].startswith('ListOptions.meta.k8s.io "" is invalid: '), status
    assert message in status["message"], status


async def test_send_initial_events_does_not_require_bookmarks(core: k.CoreV1Api, namespace: str) -> None:
    """kube-apiserver 1.36 accepts sendInitialEvents without allowWatchBookmarks."""
    await core.create_namespaced_config_map(namespace, configmap("nb"))
    events = await _watch_lines(
        core,
        namespace,
        [("watch", "true"), ("sendInitialEvents", "true"), ("resourceVersionMatch", "NotOlderThan")],
    )
    assert isinstance(events[0], dict), events
    assert events[0]["type"] == "ADDED" and events[0]["object"]["metadata"]["name"] == "nb"


async def test_kubernetes_asyncio_watch_helper(core: k.CoreV1Api, namespace: str) -> None:
    """kubernetes_asyncio's own Watch helper (used by third-party code) works unchanged."""
    from kubernetes_asyncio import watch

    await core.create_namespaced_config_map(namespace, configmap("kw"))
    seen = []
    async with watch.Watch() as w:
        async for ev in w.stream(core.list_namespaced_config_map, namespace, timeout_seconds=1):
            seen.append((ev["type"], ev["object"].metadata.name))
    assert seen == [("ADDED", "kw")]


async def test_kubernetes_asyncio_dynamic_client(envtest: object, namespace: str, api: k.ApiClient) -> None:
    from kubernetes_asyncio.dynamic import DynamicClient

    async with await DynamicClient(api) as dyn:
        cms = await dyn.resources.get(api_version="v1", kind="ConfigMap")
        await dyn.create(cms, body=configmap("dyn"), namespace=namespace)
        got = await dyn.get(cms, name="dyn", namespace=namespace)
        assert got.metadata.name == "dyn"
        listed = await dyn.get(cms, namespace=namespace)
        assert [i.metadata.name for i in listed.items] == ["dyn"]


async def test_watch_from_a_resource_version_skips_older_events(core: k.CoreV1Api, namespace: str) -> None:
    a = await core.create_namespaced_config_map(namespace, configmap("f-a"))
    b = await core.create_namespaced_config_map(namespace, configmap("f-b"))
    await core.create_namespaced_config_map(namespace, configmap("f-c"))
    events = await _watch(core, namespace, resource_version=b.metadata.resource_version, timeout_seconds=1)
    names = [e["object"]["metadata"]["name"] for e in events]
    assert names == ["f-c"], names
    assert int(a.metadata.resource_version) < int(b.metadata.resource_version)
