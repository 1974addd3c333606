"""Store indexes, back-off schedule, and the Cache's shared informers and cached reads."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from kuberay_py.cache import INDEX_NAMESPACE, INDEX_OWNER, Backoff, Cache, CacheNotSynced, Store, label_index
from kuberay_py.client import Client, resources
from kuberay_py.clock import FakeClock
from tests.running import running

from .conftest import FakeApi, Recorder, until


def obj(
    name: str, ns: str = "ns", labels: dict[str, str] | None = None, owner: str | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "labels": labels or {}, "resourceVersion": "1"}
    if owner:
        meta["ownerReferences"] = [
            {"uid": "not-the-controller", "controller": False},
            {"uid": owner, "controller": True},
        ]
    return {"metadata": meta}


# -- Store ---------------------------------------------------------------------------------------


def test_store_indexes_follow_updates_and_removals() -> None:
    store = Store()
    store.add_label_index("app")
    store.upsert(obj("a", labels={"app": "x"}, owner="rc-1"))
    store.upsert(obj("b", labels={"app": "y"}, owner="rc-1"))
    store.upsert(obj("c", ns="other", labels={"app": "x"}))
    assert [o["metadata"]["name"] for o in store.by_index(INDEX_OWNER, "rc-1")] == ["a", "b"]
    assert store.by_index(INDEX_OWNER, "not-the-controller") == []
    assert [o["metadata"]["name"] for o in store.by_index(label_index("app"), "x")] == ["a", "c"]
    assert [o["metadata"]["name"] for o in store.by_index(INDEX_NAMESPACE, "ns")] == ["a", "b"]

    store.upsert(obj("a", labels={"app": "y"}))  # relabelled and orphaned
    assert [o["metadata"]["name"] for o in store.by_index(label_index("app"), "x")] == ["c"]
    assert [o["metadata"]["name"] for o in store.by_index(INDEX_OWNER, "rc-1")] == ["b"]

    store.remove("ns/b")
    assert store.by_index(INDEX_OWNER, "rc-1") == []
    assert store.get("ns/b") is None and len(store) == 2


def test_label_index_added_later_indexes_existing_objects() -> None:
    store = Store()
    store.upsert(obj("a", labels={"ray.io/node-type": "head"}))
    store.upsert(obj("b", labels={"ray.io/node-type": "worker"}))
    store.add_label_index("ray.io/node-type")
    assert [o["metadata"]["name"] for o in store.by_index(label_index("ray.io/node-type"), "head")] == ["a"]
    with pytest.raises(KeyError, match="no index"):
        store.by_index(label_index("other"), "x")


def test_cluster_scoped_keys_have_no_namespace() -> None:
    store = Store()
    store.upsert({"metadata": {"name": "node-1"}})
    assert store.keys() == ["node-1"]


def test_backoff_schedule_jitter_cap_and_reset() -> None:
    class Fixed(random.Random):
        def random(self) -> float:
            return 0.5

    b = Backoff(rng=Fixed())
    assert [round(b.next_delay(), 3) for _ in range(8)] == [1.2, 2.4, 4.8, 9.6, 19.2, 30.0, 30.0, 30.0]
    b.reset()
    assert b.next_delay() == pytest.approx(1.2)
    no_jitter = Backoff(jitter=0.0)
    assert [no_jitter.next_delay() for _ in range(3)] == [0.8, 1.6, 3.2]


# -- Cache ---------------------------------------------------------------------------------------


async def test_cache_reads_from_memory_with_selector_and_indexes(api: FakeApi, client: Client) -> None:
    api.create(
        "head",
        labels={"ray.io/node-type": "head", "ray.io/cluster": "rc"},
        ownerReferences=[{"uid": "rc-uid", "controller": True}],
    )
    api.create(
        "worker",
        labels={"ray.io/node-type": "worker", "ray.io/cluster": "rc"},
        ownerReferences=[{"uid": "rc-uid", "controller": True}],
    )
    api.create("unrelated", labels={"app": "web"})
    cache = Cache(client, selectors={resources.PODS: "ray.io/node-type"}, clock=FakeClock())
    inf = cache.informer_for(resources.PODS)
    assert cache.informer_for(resources.PODS) is inf  # shared
    async with running(cache):
        assert await cache.wait_for_cache_sync()
        assert api.list_requests[0]["labelSelector"] == "ray.io/node-type"
        requests = len(api.list_requests) + len(api.watch_requests)

        assert cache.get(resources.PODS, "head", "ns") is not None
        assert cache.get(resources.PODS, "unrelated", "ns") is None  # outside the selector
        names = [
            p["metadata"]["name"] for p in cache.list(resources.PODS, "ns", labels={"ray.io/cluster": "rc"})
        ]
        assert names == ["head", "worker"]
        heads = cache.list(resources.PODS, "ns", labels={"ray.io/cluster": "rc", "ray.io/node-type": "head"})
        assert [p["metadata"]["name"] for p in heads] == ["head"]
        assert [p["metadata"]["name"] for p in cache.list_owned(resources.PODS, "rc-uid", "ns")] == [
            "head",
            "worker",
        ]
        assert cache.list(resources.PODS, "elsewhere") == []
        assert len(cache.list(resources.PODS)) == 2
        assert len(api.list_requests) + len(api.watch_requests) == requests  # reads never hit the network

        api.create("worker-2", labels={"ray.io/node-type": "worker", "ray.io/cluster": "rc"})
        await until(lambda: cache.get(resources.PODS, "worker-2", "ns") is not None)
        assert len(cache.list(resources.PODS, "ns", labels={"ray.io/cluster": "rc"})) == 3


async def test_reads_before_sync_and_outside_namespaces_are_errors(api: FakeApi, client: Client) -> None:
    cache = Cache(client, namespaces=["a"], clock=FakeClock())
    with pytest.raises(CacheNotSynced, match="wait_for_cache_sync"):
        cache.get(resources.PODS, "x", "a")
    with pytest.raises(ValueError, match="not watched"):
        cache.list(resources.PODS, "b")
    with pytest.raises(ValueError, match="needs a namespace"):
        cache.get(resources.PODS, "x")


async def test_multiple_namespaces_merge_and_relist_only_their_own(api: FakeApi, client: Client) -> None:
    api.create("p", ns="a")
    api.create("p", ns="b")
    api.create("p", ns="c")
    cache = Cache(client, namespaces=["a", "b"], clock=FakeClock())
    inf = cache.informer_for(resources.PODS)
    rec = Recorder()
    inf.add_event_handler(rec)
    assert len(inf.reflectors) == 2
    async with running(cache):
        assert await cache.wait_for_cache_sync()
        assert sorted(inf.store.keys()) == ["a/p", "b/p"]
        await until(lambda: len(api.watchers) == 2)
        # Namespace a's watch expires and relists; b's objects must not be touched.
        api.deliver = False
        api.remove("p", ns="a")
        api.deliver = True
        for w in api.watchers:
            if w.namespace == "a":
                w.queue.put_nowait(
                    b'{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}\n'
                )
        await rec.wait_for(lambda ev: len(ev) == 3)
        assert rec.events[2] == ("delete", "a/p", "101")
        assert sorted(inf.store.keys()) == ["b/p"]
        assert cache.list(resources.PODS, "b")[0]["metadata"]["namespace"] == "b"


async def test_lists_by_label_and_owner_keep_to_their_namespace(api: FakeApi, client: Client) -> None:
    """Namespaces "a" and "a-b" (one name a prefix of the other) hold Pods with the same label and
    the same controller; a list in one returns only its own."""
    for ns in ("a", "a-b"):
        api.create(
            "p",
            ns=ns,
            labels={"ray.io/cluster": "rc"},
            ownerReferences=[{"uid": "rc-uid", "controller": True}],
        )
    cache = Cache(client, clock=FakeClock())
    cache.informer_for(resources.PODS)
    async with running(cache):
        assert await cache.wait_for_cache_sync()
        for ns in ("a", "a-b"):
            by_label = cache.list(resources.PODS, ns, labels={"ray.io/cluster": "rc"})
            by_owner = cache.list_owned(resources.PODS, "rc-uid", ns)
            assert [p["metadata"]["namespace"] for p in by_label] == [ns]
            assert [p["metadata"]["namespace"] for p in by_owner] == [ns]
        assert len(cache.list(resources.PODS, labels={"ray.io/cluster": "rc"})) == 2


async def test_cluster_scoped_resources_ignore_namespaces(api: FakeApi, client: Client) -> None:
    cache = Cache(client, namespaces=["a", "b"], clock=FakeClock())
    assert len(cache.informer_for(resources.NODES).reflectors) == 1
    assert cache.informer_for(resources.NODES).reflectors[0].namespace is None


async def test_wait_for_cache_sync_times_out_on_the_clock(client: Client) -> None:
    clock = FakeClock()
    cache = Cache(client, clock=clock)
    cache.informer_for(resources.PODS)  # never run, so never synced
    waiter = asyncio.create_task(cache.wait_for_cache_sync(timeout=10))
    await until(lambda: clock.sleepers == 1)
    await clock.advance(10)
    assert await asyncio.wait_for(waiter, 5) is False


async def test_informer_requested_while_running_is_started(api: FakeApi, client: Client) -> None:
    api.create("p")
    cache = Cache(client, clock=FakeClock())
    async with running(cache):
        assert await cache.wait_for_cache_sync()  # nothing registered yet
        await asyncio.sleep(0)
        cache.informer_for(resources.PODS)
        assert await asyncio.wait_for(cache.wait_for_cache_sync(), 5)
        assert cache.get(resources.PODS, "p", "ns") is not None
