"""Objects, the cluster-wide resourceVersion and the bounded event history watches resume from.

One integer counter stands in for etcd's revision: every write takes the next value, so
resourceVersions are comparable across kinds exactly as they are on a real cluster (clients must
not rely on that, but informers' resume logic does rely on monotonicity). Each resource keeps
its own window of past events; a watch that asks for a version older than the window gets
``410 Expired``, which is what forces informers to relist.

Objects are kept as plain dicts with their JSON bytes cached, because a list of 10,000 Pods must
be served without re-encoding 10,000 dicts.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

__all__ = ["Bucket", "Event", "Storage", "Watcher", "bare_item"]

ObjKey = tuple[str, str]  # (namespace or "", name)


def bare_item(obj: dict[str, Any]) -> dict[str, Any]:
    """An item of a built-in kind's list as kube-apiserver encodes it: typed list items carry no
    ``apiVersion``/``kind`` (only the list has them). Custom resources keep theirs."""
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}


@dataclass(slots=True)
class Event:
    rv: int
    type: str  # ADDED / MODIFIED / DELETED
    obj: dict[str, Any]
    old: dict[str, Any] | None
    raw: bytes  # orjson of obj

    _lines: dict[str, bytes] = field(default_factory=dict)

    def line(self, type_: str | None = None, obj_raw: bytes | None = None) -> bytes:
        """The watch-stream line for this event (cached per event type)."""
        t = type_ or self.type
        if obj_raw is not None:
            return b'{"type":"' + t.encode() + b'","object":' + obj_raw + b"}\n"
        cached = self._lines.get(t)
        if cached is None:
            cached = b'{"type":"' + t.encode() + b'","object":' + self.raw + b"}\n"
            self._lines[t] = cached
        return cached


class Watcher:
    """One open watch: a filter plus a queue the store pushes encoded lines into."""

    def __init__(
        self,
        namespace: str | None,
        matches: Any,  # Callable[[dict], bool]
        api_version: str,
    ) -> None:
        self.namespace = namespace
        self.matches = matches
        self.api_version = api_version
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.closed = False
        self.expire_message: str | None = None
        self.cut = False
        # Events at or below this resourceVersion were asked to be skipped (watch from a future RV).
        self.min_rv = 0
        # Encodes an event's object differently (kubectl's Table watches); None: the stored JSON.
        self.render: Any = None
        # The object as this watch's version shows it; None: the stored object with its apiVersion set.
        self.present: Any = None

    def _in_scope(self, obj: dict[str, Any]) -> bool:
        if self.namespace is None:
            return True
        return bool((obj.get("metadata") or {}).get("namespace") == self.namespace)

    def _raw(self, ev: Event, obj: dict[str, Any], rv: int | None = None) -> bytes:
        if self.render is not None:
            if rv is not None:
                obj = {**obj, "metadata": {**obj.get("metadata", {}), "resourceVersion": str(rv)}}
            return bytes(self.render(obj))
        if obj is ev.obj and obj.get("apiVersion") == self.api_version:
            return ev.raw
        out = dict(self.present(obj)) if self.present is not None else dict(obj)
        out["apiVersion"] = self.api_version
        if rv is not None:
            out["metadata"] = {**obj.get("metadata", {}), "resourceVersion": str(rv)}
        return orjson.dumps(out)

    def offer(self, ev: Event) -> None:
        """Translate a store event into what this watch should see (selector transitions)."""
        if self.closed or ev.rv <= self.min_rv:
            return
        new_ok = self._in_scope(ev.obj) and self.matches(ev.obj)
        if ev.type == "ADDED":
            if new_ok:
                self.queue.put_nowait(self._line(ev, "ADDED", ev.obj))
            return
        if ev.type == "DELETED":
            if new_ok:
                self.queue.put_nowait(self._line(ev, "DELETED", ev.obj))
            return
        old_ok = ev.old is not None and self._in_scope(ev.old) and self.matches(ev.old)
        if new_ok and old_ok:
            self.queue.put_nowait(self._line(ev, "MODIFIED", ev.obj))
        elif new_ok:
            self.queue.put_nowait(self._line(ev, "ADDED", ev.obj))
        elif old_ok and ev.old is not None:
            # kube's cacher: the previous content, stamped with this event's resourceVersion.
            self.queue.put_nowait(ev.line("DELETED", self._raw(ev, ev.old, ev.rv)))

    def _line(self, ev: Event, type_: str, obj: dict[str, Any]) -> bytes:
        if self.render is not None:
            return ev.line(type_, self._raw(ev, obj))
        if obj.get("apiVersion") == self.api_version:
            return ev.line(type_)
        return ev.line(type_, self._raw(ev, obj))

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.queue.put_nowait(None)

    def cut_off(self) -> None:
        """End the stream abruptly (no ERROR event, no clean end): a broken connection."""
        self.cut = True
        self.close()

    def expire(self, message: str) -> None:
        self.expire_message = message
        self.close()


class Bucket:
    """All objects of one resource (all served versions share it)."""

    def __init__(self, history_size: int) -> None:
        self.objects: dict[ObjKey, dict[str, Any]] = {}
        self.raw: dict[ObjKey, bytes] = {}
        self.item_raw: dict[ObjKey, bytes] = {}  # without apiVersion/kind, for built-in lists
        self.history: deque[Event] = deque(maxlen=history_size)
        self.compacted_rv = 0
        self.watchers: set[Watcher] = set()
        self._sorted: list[ObjKey] | None = None

    def sorted_keys(self) -> list[ObjKey]:
        if self._sorted is None:
            self._sorted = sorted(self.objects)
        return self._sorted

    def encoded(self, key: ObjKey) -> bytes:
        raw = self.raw.get(key)
        if raw is None:
            raw = orjson.dumps(self.objects[key])
            self.raw[key] = raw
        return raw

    def encoded_item(self, key: ObjKey) -> bytes:
        """The object as an item of a built-in kind's list: without ``apiVersion``/``kind``."""
        raw = self.item_raw.get(key)
        if raw is None:
            raw = orjson.dumps(bare_item(self.objects[key]))
            self.item_raw[key] = raw
        return raw

    def iter_namespace(self, namespace: str | None) -> Iterator[ObjKey]:
        for key in self.sorted_keys():
            if namespace is None or key[0] == namespace:
                yield key


class Storage:
    def __init__(self, history_size: int = 10_000) -> None:
        self.rv = 1
        self.history_size = history_size
        self.buckets: dict[tuple[str, str], Bucket] = {}

    def bucket(self, key: tuple[str, str]) -> Bucket:
        b = self.buckets.get(key)
        if b is None:
            b = self.buckets[key] = Bucket(self.history_size)
        return b

    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def get(self, key: tuple[str, str], namespace: str, name: str) -> dict[str, Any] | None:
        b = self.buckets.get(key)
        return None if b is None else b.objects.get((namespace, name))

    def _record(self, b: Bucket, ev: Event) -> None:
        if len(b.history) == b.history.maxlen and b.history:
            b.compacted_rv = b.history[0].rv
        b.history.append(ev)
        for w in list(b.watchers):
            w.offer(ev)

    def put(self, key: tuple[str, str], obj: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
        """Store ``obj`` (already prepared) under a fresh resourceVersion and emit ADDED/MODIFIED."""
        b = self.bucket(key)
        meta = obj["metadata"]
        okey = (meta.get("namespace") or "", meta["name"])
        rv = self.next_rv()
        meta["resourceVersion"] = str(rv)
        if okey not in b.objects:
            b._sorted = None
        b.objects[okey] = obj
        raw = orjson.dumps(obj)
        b.raw[okey] = raw
        b.item_raw.pop(okey, None)
        self._record(b, Event(rv, "MODIFIED" if old is not None else "ADDED", obj, old, raw))
        return obj

    def delete(self, key: tuple[str, str], old: dict[str, Any]) -> dict[str, Any]:
        """Remove the object; the DELETED event carries the deletion's resourceVersion."""
        b = self.bucket(key)
        meta = old["metadata"]
        okey = (meta.get("namespace") or "", meta["name"])
        b.objects.pop(okey, None)
        b.raw.pop(okey, None)
        b.item_raw.pop(okey, None)
        b._sorted = None
        rv = self.next_rv()
        gone = dict(old)
        gone["metadata"] = {**meta, "resourceVersion": str(rv)}
        self._record(b, Event(rv, "DELETED", gone, old, orjson.dumps(gone)))
        return gone

    def drop_bucket(self, key: tuple[str, str]) -> None:
        b = self.buckets.pop(key, None)
        if b is not None:
            for w in list(b.watchers):
                w.close()

    def compact(self) -> None:
        """Forget all history: any watch from an older resourceVersion now gets 410 Expired."""
        for b in self.buckets.values():
            b.history.clear()
            b.compacted_rv = self.rv

    def all_watchers(self) -> list[Watcher]:
        return [w for b in self.buckets.values() for w in b.watchers]
