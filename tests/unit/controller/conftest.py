"""An in-memory informer/cache with the interface of kuberay_py.cache, driven by the test."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from kuberay_py.client.resources import Resource


class FakeInformer:
    def __init__(self, res: Resource, synced: bool = True) -> None:
        self.res = res
        self.handlers: list[Any] = []
        self.objects: dict[tuple[str, str], dict[str, Any]] = {}
        self._synced = asyncio.Event()
        self._rv = 0
        if synced:
            self._synced.set()

    def add_event_handler(self, handler: Any) -> None:
        """Like the real informer: a late handler first gets what the store holds, as initial adds."""
        self.handlers.append(handler)
        for obj in list(self.objects.values()):
            handler.on_add(obj, True)

    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_for_sync(self) -> None:
        await self._synced.wait()

    def mark_synced(self) -> None:
        self._synced.set()

    def _key(self, obj: dict[str, Any]) -> tuple[str, str]:
        return (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])

    def add(self, obj: dict[str, Any], *, is_initial: bool = False) -> dict[str, Any]:
        obj = copy.deepcopy(obj)
        self._rv += 1
        obj["metadata"].setdefault("resourceVersion", str(self._rv))
        self.objects[self._key(obj)] = obj
        for h in self.handlers:
            h.on_add(obj, is_initial)
        return obj

    def update(self, new: dict[str, Any], *, resync: bool = False) -> dict[str, Any]:
        old = self.objects[self._key(new)]
        new = copy.deepcopy(new)
        if not resync:
            self._rv += 1
            new["metadata"]["resourceVersion"] = str(self._rv)
        else:
            new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        self.objects[self._key(new)] = new
        for h in self.handlers:
            h.on_update(old, new)
        return new

    def delete(self, obj: dict[str, Any]) -> None:
        last = self.objects.pop(self._key(obj))
        for h in self.handlers:
            h.on_delete(last)


class FakeCache:
    def __init__(self, synced: bool = True) -> None:
        self.informers: dict[Resource, FakeInformer] = {}
        self.synced = synced

    def informer_for(self, res: Resource) -> FakeInformer:
        if res not in self.informers:
            self.informers[res] = FakeInformer(res, self.synced)
        return self.informers[res]


@pytest.fixture
def cache() -> FakeCache:
    return FakeCache()


@pytest.fixture
def unsynced_cache() -> FakeCache:
    return FakeCache(synced=False)
