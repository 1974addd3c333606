"""The built-in server's fault knobs (skipped against a real kube-apiserver; the request log of
both modes is tested in tests/integration/test_request_log.py)."""

from __future__ import annotations

import asyncio

import pytest

from kuberay_py.client import ApiError, Client, Gone, TransportError
from kuberay_py.client import resources as r
from kuberay_py.envtest import Environment

from .helpers import configmap

pytestmark = pytest.mark.builtin_only(reason="tests the built-in server's own fault-injection knobs")


async def test_inject_errors_for_matching_requests(k8s: Client, envtest: Environment, namespace: str) -> None:
    assert envtest.server is not None
    await k8s.create(r.CONFIGMAPS, configmap("inj"), namespace)
    fault = envtest.server.inject("GET", rf"/namespaces/{namespace}/configmaps/inj$", 500, count=2)
    for _ in range(2):
        with pytest.raises(ApiError) as e:
            await k8s.get(r.CONFIGMAPS, "inj", namespace)
        assert (e.value.status, e.value.reason) == (500, "InternalError")
    assert (await k8s.get(r.CONFIGMAPS, "inj", namespace))["metadata"]["name"] == "inj"
    assert fault.hits == 2


async def test_inject_by_verb(k8s: Client, envtest: Environment, namespace: str) -> None:
    assert envtest.server is not None
    envtest.server.inject("list", rf"/namespaces/{namespace}/configmaps$", 409, reason="Conflict")
    with pytest.raises(ApiError) as e:
        await k8s.list(r.CONFIGMAPS, namespace)
    assert e.value.status == 409
    await k8s.create(r.CONFIGMAPS, configmap("after"), namespace)  # POST to the same path is untouched


async def _first_event(k8s: Client, namespace: str, rv: str) -> dict[str, object]:
    async for ev in k8s.watch(r.CONFIGMAPS, namespace, resource_version=rv, timeout_seconds=5):
        return ev
    raise AssertionError("watch ended without events")


async def test_compact_makes_old_versions_expire(k8s: Client, envtest: Environment, namespace: str) -> None:
    assert envtest.server is not None
    cm = await k8s.create(r.CONFIGMAPS, configmap("old"), namespace)
    rv = cm["metadata"]["resourceVersion"]
    await k8s.patch(r.CONFIGMAPS, "old", {"data": {"a": "1"}}, namespace)
    envtest.server.compact()
    with pytest.raises(Gone):
        await _first_event(k8s, namespace, rv)


async def test_force_expire_ends_open_watches_with_410(
    k8s: Client, envtest: Environment, namespace: str
) -> None:
    assert envtest.server is not None
    lst = await k8s.list(r.CONFIGMAPS, namespace)
    rv = lst["metadata"]["resourceVersion"]
    seen = asyncio.Event()

    async def consume() -> None:
        async for _ev in k8s.watch(r.CONFIGMAPS, namespace, resource_version=rv, timeout_seconds=30):
            seen.set()

    task = asyncio.create_task(consume())
    await k8s.create(r.CONFIGMAPS, configmap("seen"), namespace)
    await seen.wait()
    assert envtest.server.force_expire_watches() >= 1
    with pytest.raises(Gone):
        await task


async def test_cut_watches_breaks_the_stream(k8s: Client, envtest: Environment, namespace: str) -> None:
    assert envtest.server is not None
    started = asyncio.Event()

    async def consume() -> None:
        async for _ev in k8s.watch(r.CONFIGMAPS, namespace, timeout_seconds=30):
            started.set()

    await k8s.create(r.CONFIGMAPS, configmap("pre"), namespace)
    task = asyncio.create_task(consume())
    await started.wait()
    assert envtest.server.cut_watches() >= 1
    with pytest.raises(TransportError):
        await task


async def test_periodic_bookmarks(k8s: Client, envtest: Environment, namespace: str) -> None:
    assert envtest.server is not None
    lst = await k8s.list(r.CONFIGMAPS, namespace)
    old = envtest.server.bookmark_interval
    envtest.server.bookmark_interval = 0.05
    try:
        async for ev in k8s.watch(
            r.CONFIGMAPS,
            namespace,
            resource_version=lst["metadata"]["resourceVersion"],
            timeout_seconds=10,
            allow_bookmarks=True,
        ):
            assert ev["type"] == "BOOKMARK"
            obj = ev["object"]
            assert isinstance(obj, dict)
            assert int(obj["metadata"]["resourceVersion"]) >= int(lst["metadata"]["resourceVersion"])
            break
    finally:
        envtest.server.bookmark_interval = old


async def test_dry_run_create_leaves_no_trace_in_watch_history(
    k8s: Client, envtest: Environment, namespace: str
) -> None:
    assert envtest.server is not None
    before = envtest.server.resource_version
    await k8s.create(r.CONFIGMAPS, configmap("dry"), namespace, dry_run=True)
    assert envtest.server.resource_version == before


async def test_leftover_fault_part_1(envtest: Environment, namespace: str) -> None:
    assert envtest.server is not None
    envtest.server.inject("GET", r"/api/v1/namespaces/default$", 500, count=-1)


async def test_leftover_fault_part_2_is_cleared(k8s: Client) -> None:
    assert (await k8s.get(r.NAMESPACES, "default"))["metadata"]["name"] == "default"
