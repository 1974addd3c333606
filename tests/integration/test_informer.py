"""Informers against envtest: every change arrives, through cut watches and forced 410s."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
import structlog

from kuberay_py.cache import Cache, Informer
from kuberay_py.client import Client, resources
from kuberay_py.envtest import Environment
from kuberay_py.objects import Obj
from tests.running import running


class Recorder:
    """Records (kind, name, data) per event and lets a test await a condition on them."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any]] = []
        self._changed = asyncio.Event()

    def _note(self, kind: str, obj: Obj, extra: Any = None) -> None:
        self.events.append((kind, obj["metadata"]["name"], extra))
        self._changed.set()

    def on_add(self, obj: Obj, is_initial: bool) -> None:
        self._note("add", obj, is_initial)

    def on_update(self, old: Obj, new: Obj) -> None:
        self._note("update", new, (old.get("data"), new.get("data")))

    def on_delete(self, obj: Obj) -> None:
        self._note("delete", obj)

    def names(self, kind: str) -> list[str]:
        return [name for k, name, _ in self.events if k == kind]

    async def wait_for(self, pred: Callable[[], bool], timeout: float = 15.0) -> None:
        async def loop() -> None:
            while not pred():
                self._changed.clear()
                await self._changed.wait()

        await asyncio.wait_for(loop(), timeout)


def configmap(name: str, value: str = "1", labels: dict[str, str] | None = None) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels or {}},
        "data": {"v": value},
    }


async def server_state(k8s: Client, namespace: str) -> dict[str, str]:
    listed = await k8s.list(resources.CONFIGMAPS, namespace)
    return {f"{namespace}/{o['metadata']['name']}": o["metadata"]["resourceVersion"] for o in listed["items"]}


def store_state(informer: Informer) -> dict[str, str]:
    return {
        o["metadata"]["namespace"] + "/" + o["metadata"]["name"]: o["metadata"]["resourceVersion"]
        for o in informer.store.list()
    }


async def test_informer_sees_create_update_and_delete(k8s: Client, namespace: str) -> None:
    await k8s.create(resources.CONFIGMAPS, configmap("before"), namespace)
    informer = Informer(k8s, resources.CONFIGMAPS, namespace=namespace)
    rec = Recorder()
    informer.add_event_handler(rec)
    async with running(informer):
        await asyncio.wait_for(informer.wait_for_sync(), 15)
        assert rec.events == [("add", "before", True)]

        await k8s.create(resources.CONFIGMAPS, configmap("a"), namespace)
        await rec.wait_for(lambda: "a" in rec.names("add"))
        await k8s.patch(resources.CONFIGMAPS, "a", {"data": {"v": "2"}}, namespace)
        await rec.wait_for(lambda: "a" in rec.names("update"))
        await k8s.delete(resources.CONFIGMAPS, "a", namespace)
        await rec.wait_for(lambda: "a" in rec.names("delete"))

        assert rec.events[1:] == [
            ("add", "a", False),
            ("update", "a", ({"v": "1"}, {"v": "2"})),
            ("delete", "a", None),
        ]
        assert store_state(informer) == await server_state(k8s, namespace)
        assert all("managedFields" not in o["metadata"] for o in informer.store.list())


async def test_cache_with_label_selector_tracks_objects_entering_and_leaving(
    k8s: Client, namespace: str
) -> None:
    await k8s.create(resources.CONFIGMAPS, configmap("plain"), namespace)
    await k8s.create(resources.CONFIGMAPS, configmap("head", labels={"ray.io/node-type": "head"}), namespace)
    cache = Cache(k8s, namespaces=[namespace], selectors={resources.CONFIGMAPS: "ray.io/node-type"})
    rec = Recorder()
    cache.informer_for(resources.CONFIGMAPS).add_event_handler(rec)
    async with running(cache):
        assert await cache.wait_for_cache_sync(timeout=15)
        assert [o["metadata"]["name"] for o in cache.list(resources.CONFIGMAPS, namespace)] == ["head"]
        assert cache.get(resources.CONFIGMAPS, "plain", namespace) is None

        await k8s.patch(
            resources.CONFIGMAPS, "plain", {"metadata": {"labels": {"ray.io/node-type": "worker"}}}, namespace
        )
        await rec.wait_for(lambda: "plain" in rec.names("add"))
        workers = cache.list(resources.CONFIGMAPS, namespace, labels={"ray.io/node-type": "worker"})
        assert [o["metadata"]["name"] for o in workers] == ["plain"]

        # Leaving the selector looks like a delete to the cache.
        await k8s.patch(
            resources.CONFIGMAPS, "head", {"metadata": {"labels": {"ray.io/node-type": None}}}, namespace
        )
        await rec.wait_for(lambda: "head" in rec.names("delete"))
        assert cache.get(resources.CONFIGMAPS, "head", namespace) is None


@pytest.mark.builtin_only(reason="cuts an open watch from the server side on cue")
async def test_informer_survives_a_cut_watch_without_losing_events(
    envtest: Environment, k8s: Client, namespace: str
) -> None:
    for name in ("a", "b"):
        await k8s.create(resources.CONFIGMAPS, configmap(name), namespace)
    informer = Informer(k8s, resources.CONFIGMAPS, namespace=namespace)
    rec = Recorder()
    informer.add_event_handler(rec)
    reflector = informer.reflectors[0]
    async with running(informer):
        await asyncio.wait_for(informer.wait_for_sync(), 15)
        await _until_watching(envtest, namespace)
        assert envtest.server is not None
        assert envtest.server.cut_watches() >= 1
        # These happen while the informer is backing off after the cut.
        await k8s.create(resources.CONFIGMAPS, configmap("c"), namespace)
        await k8s.patch(resources.CONFIGMAPS, "a", {"data": {"v": "2"}}, namespace)
        await k8s.delete(resources.CONFIGMAPS, "b", namespace)
        await rec.wait_for(
            lambda: "c" in rec.names("add") and "a" in rec.names("update") and "b" in rec.names("delete")
        )
        assert store_state(informer) == await server_state(k8s, namespace)
        assert reflector.lists == 1  # resumed from its resourceVersion; no relist was needed
        assert reflector.watches >= 2


@pytest.mark.builtin_only(
    reason="answers a watch with 410 Expired on cue; kube-apiserver does so only once its watch cache has "
    "moved past the resourceVersion"
)
async def test_informer_survives_a_forced_410_by_relisting_the_diff(
    envtest: Environment, k8s: Client, namespace: str
) -> None:
    for name in ("a", "b", "c"):
        await k8s.create(resources.CONFIGMAPS, configmap(name), namespace)
    informer = Informer(k8s, resources.CONFIGMAPS, namespace=namespace)
    rec = Recorder()
    informer.add_event_handler(rec)
    reflector = informer.reflectors[0]
    server = envtest.server
    assert server is not None
    async with running(informer):
        await asyncio.wait_for(informer.wait_for_sync(), 15)
        await _until_watching(envtest, namespace)
        server.cut_watches()
        # Changes while disconnected, then history is compacted: resuming gets 410, so only the
        # relist's diff can report them.
        await k8s.create(resources.CONFIGMAPS, configmap("d"), namespace)
        await k8s.patch(resources.CONFIGMAPS, "a", {"data": {"v": "2"}}, namespace)
        await k8s.delete(resources.CONFIGMAPS, "b", namespace)
        server.compact()
        await rec.wait_for(
            lambda: "d" in rec.names("add") and "a" in rec.names("update") and "b" in rec.names("delete")
        )
        assert reflector.lists == 2
        assert ("update", "a", ({"v": "1"}, {"v": "2"})) in rec.events
        assert "c" not in rec.names("update")  # unchanged objects produce no event
        assert store_state(informer) == await server_state(k8s, namespace)

        # An ERROR 410 on the live watch relists too, and the new watch keeps delivering.
        await k8s.create(resources.CONFIGMAPS, configmap("live"), namespace)
        await rec.wait_for(lambda: "live" in rec.names("add"))  # the new watch is up and healthy
        assert server.force_expire_watches() >= 1
        await k8s.create(resources.CONFIGMAPS, configmap("e"), namespace)
        await rec.wait_for(lambda: "e" in rec.names("add"))
        assert reflector.lists == 3
        assert store_state(informer) == await server_state(k8s, namespace)


async def _until_watching(envtest: Environment, namespace: str, timeout: float = 15.0) -> None:
    """Wait until the server holds an open watch on ``namespace`` (the informer's)."""
    server = envtest.server
    assert server is not None

    for _ in range(int(timeout / 0.01)):
        if any(w.namespace == namespace for w in server.core.storage.all_watchers()):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"no watch on namespace {namespace} opened within {timeout} s")


@pytest.mark.builtin_only(reason="refuses one watch with an injected 403 while lists keep working")
async def test_informer_logs_a_403_on_watch_and_recovers(
    envtest: Environment, k8s: Client, namespace: str
) -> None:
    server = envtest.server
    assert server is not None
    fault = server.inject(
        "watch", f"/namespaces/{namespace}/configmaps$", 403, 1, message='cannot watch resource "configmaps"'
    )
    informer = Informer(k8s, resources.CONFIGMAPS, namespace=namespace)
    rec = Recorder()
    informer.add_event_handler(rec)
    with structlog.testing.capture_logs() as logs:
        async with running(informer):
            await asyncio.wait_for(informer.wait_for_sync(), 15)
            await k8s.create(resources.CONFIGMAPS, configmap("after"), namespace)
            await rec.wait_for(lambda: "after" in rec.names("add"))
    assert fault.hits == 1
    failed = [e for e in logs if e["event"] == "watch_failed"]
    assert len(failed) == 1
    assert failed[0]["log_level"] == "error" and failed[0]["code"] == 403
    assert "cannot watch" in failed[0]["error"] and failed[0]["retry_in_s"] >= 0.8
    assert informer.reflectors[0].watches == 2
