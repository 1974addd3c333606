"""A small scripted list/watch API server for reflector and informer tests.

It keeps objects with increasing resourceVersions and an event history, serves paginated lists
and watches that replay history after the requested version, and exposes the faults the reflector
must survive: compaction (410 on watch start or as an ERROR event), cut connections, garbage
lines, canned error responses (403, 429, ...), and a pause that withholds live events so a test
can create a gap that only a resume or a relist can fill.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from kuberay_py.client import Client, ClientConfig
from kuberay_py.objects import Obj

CLOSE = object()
CUT = object()


def _matches(obj: Obj, selector: str | None) -> bool:
    if not selector:
        return True
    labels = obj["metadata"].get("labels") or {}
    for term in selector.split(","):
        if "=" in term:
            k, v = term.split("=", 1)
            if labels.get(k) != v:
                return False
        elif term not in labels:
            return False
    return True


@dataclass
class Watcher:
    namespace: str | None
    selector: str | None
    queue: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)


class FakeApi:
    """Pods only, which is all a reflector test needs."""

    def __init__(self) -> None:
        self.server: TestServer | None = None
        self.rv = 100
        self.objects: dict[str, Obj] = {}
        self.history: list[tuple[int, str, Obj]] = []
        self.compacted = 0
        self.watchers: list[Watcher] = []
        self.deliver = True
        self.watch_faults: list[tuple[int, Obj | None]] = []
        self.list_faults: list[tuple[int, Obj | None]] = []
        self.list_requests: list[dict[str, str]] = []
        self.watch_requests: list[dict[str, str]] = []
        self.watch_opened = asyncio.Event()

    @property
    def url(self) -> str:
        assert self.server is not None
        return str(self.server.make_url("")).rstrip("/")

    # -- state changes -----------------------------------------------------------------------------

    def _emit(self, etype: str, obj: Obj) -> None:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        snapshot = copy.deepcopy(obj)
        self.history.append((self.rv, etype, snapshot))
        if self.deliver:
            for w in self.watchers:
                if self._visible(w, snapshot):
                    w.queue.put_nowait(self._line(etype, snapshot))

    @staticmethod
    def _visible(w: Watcher, obj: Obj) -> bool:
        return (w.namespace is None or obj["metadata"]["namespace"] == w.namespace) and _matches(
            obj, w.selector
        )

    @staticmethod
    def _line(etype: str, obj: Obj) -> bytes:
        return orjson.dumps({"type": etype, "object": obj}) + b"\n"

    def create(self, name: str, ns: str = "ns", labels: dict[str, str] | None = None, **meta: Any) -> Obj:
        obj: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": ns,
                "uid": f"uid-{ns}-{name}",
                "labels": labels or {},
                "managedFields": [{"manager": "kubectl", "operation": "Update"}],
                **meta,
            },
            "spec": {"n": 0},
        }
        self.objects[f"{ns}/{name}"] = obj
        self._emit("ADDED", obj)
        return obj

    def modify(self, name: str, ns: str = "ns", **spec: Any) -> Obj:
        obj = self.objects[f"{ns}/{name}"]
        obj["spec"].update(spec)
        self._emit("MODIFIED", obj)
        return obj

    def remove(self, name: str, ns: str = "ns") -> None:
        obj = self.objects.pop(f"{ns}/{name}")
        self._emit("DELETED", obj)

    # -- faults ----------------------------------------------------------------------------------

    def _to_watchers(self, *items: Any) -> None:
        for w in list(self.watchers):
            for item in items:
                w.queue.put_nowait(item)

    def bookmark(self) -> None:
        self._to_watchers(
            self._line("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": str(self.rv)}})
        )

    def expire(self) -> None:
        """Compact history up to now and end every watch with an ERROR 410 event."""
        self.compacted = self.rv + 1
        err = {"kind": "Status", "status": "Failure", "code": 410, "reason": "Expired", "message": "too old"}
        self._to_watchers(self._line("ERROR", err), CLOSE)

    def compact(self) -> None:
        self.compacted = self.rv + 1

    def cut(self) -> None:
        self._to_watchers(CUT)

    def close_watches(self) -> None:
        self._to_watchers(CLOSE)

    def garbage(self, raw: bytes = b"<html>502 Bad Gateway</html>\n") -> None:
        self._to_watchers(raw)

    # -- handlers ----------------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        parts = request.path.strip("/").split("/")
        namespace = parts[3] if len(parts) >= 5 and parts[2] == "namespaces" else None
        if request.query.get("watch") == "true":
            return await self._watch(request, namespace)
        return self._list(request, namespace)

    def _list(self, request: web.Request, namespace: str | None) -> web.StreamResponse:
        self.list_requests.append(dict(request.query))
        if self.list_faults:
            code, body = self.list_faults.pop(0)
            return web.json_response(body, status=code)
        selector = request.query.get("labelSelector")
        items = [
            copy.deepcopy(o)
            for k, o in sorted(self.objects.items())
            if (namespace is None or o["metadata"]["namespace"] == namespace) and _matches(o, selector)
        ]
        start = int(request.query.get("continue") or 0)
        limit = int(request.query.get("limit") or 0)
        meta: Obj = {"resourceVersion": str(self.rv)}
        page = items[start:]
        if limit and len(page) > limit:
            page = page[:limit]
            meta["continue"] = str(start + limit)
        return web.json_response({"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": page})

    async def _watch(self, request: web.Request, namespace: str | None) -> web.StreamResponse:
        self.watch_requests.append(dict(request.query))
        if self.watch_faults:
            code, body = self.watch_faults.pop(0)
            if code == 200:  # a watch the server ends at once, without events
                return web.Response(status=200, content_type="application/json")
            return web.json_response(body, status=code)
        since = int(request.query.get("resourceVersion") or 0)
        if since and since < self.compacted - 1:
            status = {
                "kind": "Status",
                "code": 410,
                "reason": "Expired",
                "message": f"too old resource version: {since}",
            }
            return web.json_response(status, status=410)
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        watcher = Watcher(namespace, request.query.get("labelSelector"))
        for rv, etype, obj in self.history:
            if rv > since and self._visible(watcher, obj):
                await resp.write(self._line(etype, obj))
        self.watchers.append(watcher)
        self.watch_opened.set()
        try:
            while True:
                item = await watcher.queue.get()
                if item is CLOSE:
                    await resp.write_eof()
                    break
                if item is CUT:
                    assert request.transport is not None
                    request.transport.close()
                    break
                await resp.write(item)
        finally:
            self.watchers.remove(watcher)
        return resp


@dataclass
class Recorder:
    """An EventHandler that records (kind, key, rv...) tuples and lets tests await conditions."""

    events: list[tuple[Any, ...]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def _note(self, *event: Any) -> None:
        self.events.append(event)
        self.changed.set()

    def on_add(self, obj: Obj, is_initial: bool) -> None:
        self._note("add", _key(obj), obj["metadata"]["resourceVersion"], is_initial)

    def on_update(self, old: Obj, new: Obj) -> None:
        self._note(
            "update", _key(new), old["metadata"]["resourceVersion"], new["metadata"]["resourceVersion"]
        )

    def on_delete(self, obj: Obj) -> None:
        self._note("delete", _key(obj), obj["metadata"]["resourceVersion"])

    async def wait_for(self, pred: Callable[[list[tuple[Any, ...]]], bool], timeout: float = 5.0) -> None:
        async def loop() -> None:
            while not pred(self.events):
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(loop(), timeout)

    def of(self, kind: str) -> list[tuple[Any, ...]]:
        return [e for e in self.events if e[0] == kind]


def _key(obj: Obj) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


async def until(cond: Callable[[], bool], turns: int = 3000) -> None:
    """Let real I/O progress until ``cond()`` holds (bounded; fails the test otherwise)."""
    for _ in range(turns):
        if cond():
            return
        await asyncio.sleep(0.001)
    raise AssertionError(f"condition not reached: {cond.__code__.co_firstlineno}")


@pytest.fixture
async def api() -> AsyncIterator[FakeApi]:
    fake = FakeApi()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", fake.handle)
    fake.server = TestServer(app, host="127.0.0.1")
    await fake.server.start_server()
    try:
        yield fake
    finally:
        fake.close_watches()
        await fake.server.close()


@pytest.fixture
async def client(api: FakeApi) -> AsyncIterator[Client]:
    async with Client(ClientConfig(host=api.url, qps=0, burst=0)) as c:
        yield c
