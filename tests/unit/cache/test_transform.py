"""Cache transforms: every object is transformed before it is stored and before handlers see it."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import structlog

from kuberay_py.cache import Cache, Informer, strip_managed_fields
from kuberay_py.client import Client, resources
from kuberay_py.clock import FakeClock
from kuberay_py.objects import Obj
from tests.running import running

from .conftest import FakeApi, until


def slim(obj: Obj) -> Obj:
    """Keep name/namespace/resourceVersion/labels and a marker; drop spec and managedFields."""
    meta = obj["metadata"]
    kept = {k: meta[k] for k in ("name", "namespace", "resourceVersion", "labels") if k in meta}
    return {"metadata": kept, "slimmed": True, "n": obj.get("spec", {}).get("n")}


class Seen:
    """Records every object a handler receives, to prove handlers only see transformed ones."""

    def __init__(self) -> None:
        self.objects: list[tuple[str, Obj]] = []

    def on_add(self, obj: Obj, is_initial: bool) -> None:
        self.objects.append(("add", obj))

    def on_update(self, old: Obj, new: Obj) -> None:
        self.objects.append(("update-old", old))
        self.objects.append(("update-new", new))

    def on_delete(self, obj: Obj) -> None:
        self.objects.append(("delete", obj))

    def kinds(self) -> list[str]:
        return [k for k, _ in self.objects]


def informer(client: Client, transform: Any) -> Informer:
    return Informer(
        client, resources.PODS, namespace="ns", clock=FakeClock(), rng=random.Random(1), transform=transform
    )


def all_slim(inf: Informer) -> bool:
    return all(o.get("slimmed") is True and "spec" not in o for o in inf.store.list())


async def test_list_watch_and_delete_are_transformed_before_store_and_handlers(
    api: FakeApi, client: Client
) -> None:
    api.create("a", labels={"x": "1"})
    inf = informer(client, slim)
    seen = Seen()
    inf.add_event_handler(seen)
    async with running(inf):
        await until(lambda: bool(api.watchers))
        assert inf.store.get("ns/a") == {
            "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "101", "labels": {"x": "1"}},
            "slimmed": True,
            "n": 0,
        }
        api.create("b")
        api.modify("a", n=7)
        api.remove("b")
        await until(lambda: len(seen.objects) == 5)
        assert seen.kinds() == ["add", "add", "update-old", "update-new", "delete"]
        assert all(o.get("slimmed") is True and "spec" not in o for _, o in seen.objects)
        assert inf.store.keys() == ["ns/a"]
        assert inf.store.get("ns/a") is not None and inf.store.get("ns/a")["n"] == 7  # type: ignore[index]
        assert all_slim(inf)


async def test_relist_diff_compares_and_stores_transformed_objects(api: FakeApi, client: Client) -> None:
    for name in ("a", "b", "c"):
        api.create(name)
    inf = informer(client, slim)
    seen = Seen()
    inf.add_event_handler(seen)
    async with running(inf):
        await until(lambda: bool(api.watchers))
        api.deliver = False  # only the relist after the 410 can show these
        api.modify("a", n=3)
        api.remove("b")
        api.create("d")
        api.deliver = True
        api.expire()
        await until(lambda: len(seen.objects) == 3 + 4)
        assert sorted(seen.kinds()[3:]) == ["add", "delete", "update-new", "update-old"]
        assert all(o.get("slimmed") is True for _, o in seen.objects)
        assert sorted(inf.store.keys()) == ["ns/a", "ns/c", "ns/d"]
        assert inf.store.get("ns/a")["n"] == 3  # type: ignore[index]
        assert all_slim(inf)


async def test_failing_transform_is_logged_and_the_object_kept(api: FakeApi, client: Client) -> None:
    def picky(obj: Obj) -> Obj:
        if obj["metadata"]["name"] == "bad":
            raise KeyError("no such field")
        return slim(obj)

    api.create("good")
    api.create("bad")
    inf = informer(client, picky)
    with structlog.testing.capture_logs() as logs:
        async with running(inf):
            await asyncio.wait_for(inf.wait_for_sync(), 5)
    assert all_slim_except(inf, "ns/bad")
    bad = inf.store.get("ns/bad")
    assert bad is not None and bad["spec"] == {"n": 0} and "managedFields" not in bad["metadata"]
    failures = [e for e in logs if e["event"] == "cache_transform_failed"]
    assert [(e["key"], e["resource"], e["log_level"]) for e in failures] == [("ns/bad", "pods", "error")]


def all_slim_except(inf: Informer, key: str) -> bool:
    return all(inf.store.get(k).get("slimmed") is True for k in inf.store.keys() if k != key)  # type: ignore[union-attr]


async def test_non_dict_result_is_logged_and_the_object_kept(api: FakeApi, client: Client) -> None:
    api.create("a")
    inf = informer(client, lambda o: None)
    with structlog.testing.capture_logs() as logs:
        async with running(inf):
            await asyncio.wait_for(inf.wait_for_sync(), 5)
    stored = inf.store.get("ns/a")
    assert stored is not None and stored["metadata"]["name"] == "a"
    assert "managedFields" not in stored["metadata"]
    assert [e["returned"] for e in logs if e["event"] == "cache_transform_returned_non_dict"] == ["NoneType"]


async def test_transform_that_loses_the_key_is_logged_and_the_object_kept(
    api: FakeApi, client: Client
) -> None:
    api.create("a")
    api.create("b")
    inf = informer(client, lambda o: {"metadata": {"name": o["metadata"]["name"]}})  # namespace lost
    with structlog.testing.capture_logs() as logs:
        async with running(inf):
            await asyncio.wait_for(inf.wait_for_sync(), 5)
    assert sorted(inf.store.keys()) == ["ns/a", "ns/b"]  # not collapsed under bare names
    assert all(o["spec"] == {"n": 0} and "managedFields" not in o["metadata"] for o in inf.store.list())
    changed = [e["key"] for e in logs if e["event"] == "cache_transform_changed_identity"]
    assert sorted(changed) == ["ns/a", "ns/b"]


async def test_default_strips_managed_fields_and_none_keeps_them(api: FakeApi, client: Client) -> None:
    api.create("a")
    default = Informer(client, resources.PODS, namespace="ns", clock=FakeClock())
    raw = Informer(client, resources.PODS, namespace="ns", clock=FakeClock(), transform=None)
    assert default.transform is strip_managed_fields
    async with running(default), running(raw):
        await asyncio.wait_for(asyncio.gather(default.wait_for_sync(), raw.wait_for_sync()), 5)
    assert "managedFields" not in default.store.get("ns/a")["metadata"]  # type: ignore[index]
    assert raw.store.get("ns/a")["metadata"]["managedFields"] == [  # type: ignore[index]
        {"manager": "kubectl", "operation": "Update"}
    ]


async def test_cache_transform_per_resource_replaces_the_default(api: FakeApi, client: Client) -> None:
    api.create("a")
    cache = Cache(client, transforms={resources.PODS: slim}, clock=FakeClock())
    pods = cache.informer_for(resources.PODS)
    # The fake server answers every path with the same Pods; enough to compare two resources.
    config_maps = cache.informer_for(resources.CONFIGMAPS)
    async with running(cache):
        assert await cache.wait_for_cache_sync(timeout=5)
        pod = cache.get(resources.PODS, "a", "ns")
        other = cache.get(resources.CONFIGMAPS, "a", "ns")
    assert pods.transform is slim and config_maps.transform is strip_managed_fields
    assert pod is not None and pod["slimmed"] is True and "spec" not in pod
    assert other is not None and other["spec"] == {"n": 0} and "managedFields" not in other["metadata"]


async def test_cache_default_transform_none_stores_objects_as_received(api: FakeApi, client: Client) -> None:
    api.create("a")
    cache = Cache(client, default_transform=None, clock=FakeClock())
    cache.informer_for(resources.PODS)
    async with running(cache):
        assert await cache.wait_for_cache_sync(timeout=5)
        pod = cache.get(resources.PODS, "a", "ns")
    assert pod is not None and pod["metadata"]["managedFields"]
