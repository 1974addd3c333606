"""A hand-fed cache, a recording API client and an event recorder for reconciler and phase tests.

The cache is fed by the test, so it can be made stale on purpose; the client answers like an API
server (NotFound, AlreadyExists, resourceVersions, injected failures) and records every request,
but never touches the cache: what a reconcile sees next is what the test puts there.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

from kuberay_py.client import AlreadyExists, ApiError, NotFound, Resource
from kuberay_py.objects import Obj

__all__ = ["Events", "FakeCache", "RecordingClient"]


class FakeCache:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], Obj] = {}

    def put(self, res: Resource, obj: Obj) -> Obj:
        self.objects[(res.kind, obj["metadata"].get("namespace", ""), obj["metadata"]["name"])] = obj
        return obj

    def remove(self, res: Resource, ns: str, name: str) -> None:
        self.objects.pop((res.kind, ns, name), None)

    def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None:
        return self.objects.get((res.kind, namespace or "", name))

    def list(
        self, res: Resource, namespace: str | None = None, *, labels: dict[str, str] | None = None
    ) -> list[Obj]:
        out = []
        for (kind, ns, _), obj in self.objects.items():
            if kind != res.kind or (namespace and ns != namespace):
                continue
            obj_labels = obj["metadata"].get("labels") or {}
            if all(obj_labels.get(k) == v for k, v in (labels or {}).items()):
                out.append(obj)
        return out


class RecordingClient:
    """Answers like an API server and records every request as ``(verb, kind, name)``.

    ``existing`` holds ``(kind, name)`` of objects a GET finds (creates add to it); ``stored``
    keeps what was created or updated, returned by a later GET. ``fail[(verb, kind)]`` makes that
    request raise the given error.
    """

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, str]] = []
        self.existing: set[tuple[str, str]] = set()
        self.stored: dict[tuple[str, str], Obj] = {}
        self.fail: dict[tuple[str, str], ApiError] = {}
        self.patches: list[tuple[str, str, Obj]] = []
        self.last_status: Obj = {}
        self._ids = itertools.count(1)

    def _record(self, verb: str, res: Resource, name: str) -> None:
        self.requests.append((verb, res.kind, name))
        error = self.fail.get((verb, res.kind))
        if error is not None:
            raise error

    def _stamp(self, obj: Obj) -> Obj:
        obj["metadata"]["resourceVersion"] = str(next(self._ids))
        return obj

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj:
        self._record("get", res, name)
        if (res.kind, name) not in self.existing:
            raise NotFound(404, "NotFound", f"{res.kind} {name} not found")
        return copy.deepcopy(
            self.stored.get((res.kind, name)) or {"metadata": {"name": name, "namespace": namespace}}
        )

    async def create(self, res: Resource, body: Obj, namespace: str | None = None) -> Obj:
        obj = copy.deepcopy(body)
        n = next(self._ids)
        meta = obj["metadata"]
        meta.setdefault("name", f"{meta.get('generateName', 'x-')}{n:05d}")
        self._record("create", res, meta["name"])
        if (res.kind, meta["name"]) in self.existing:
            raise AlreadyExists(409, "AlreadyExists", f"{res.kind} {meta['name']} already exists")
        meta["uid"] = f"uid-{n}"
        meta["namespace"] = namespace
        self.existing.add((res.kind, meta["name"]))
        self.stored[(res.kind, meta["name"])] = self._stamp(obj)
        return copy.deepcopy(obj)

    async def update(self, res: Resource, body: Obj) -> Obj:
        self._record("update", res, body["metadata"]["name"])
        obj = self._stamp(copy.deepcopy(body))
        self.stored[(res.kind, body["metadata"]["name"])] = obj
        return copy.deepcopy(obj)

    async def update_status(self, res: Resource, body: Obj) -> Obj:
        self._record("update_status", res, body["metadata"]["name"])
        self.last_status = body["status"]
        obj = self._stamp(copy.deepcopy(body))
        self.stored[(res.kind, body["metadata"]["name"])] = obj
        return copy.deepcopy(obj)

    async def patch(self, res: Resource, name: str, body: Obj, namespace: str | None = None, **_: Any) -> Obj:
        self._record("patch", res, name)
        self.patches.append((res.kind, name, body))
        return {"metadata": {"name": name, "namespace": namespace}}

    async def delete(self, res: Resource, name: str, namespace: str | None = None, **_: Any) -> Obj:
        self._record("delete", res, name)
        return {}

    async def delete_collection(self, res: Resource, namespace: str | None = None, **kw: Any) -> Obj:
        self._record("deletecollection", res, kw.get("label_selector", ""))
        return {}


class Events:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def event(self, obj: Obj, type_: Any, reason: str, message: str, **_: Any) -> None:
        self.events.append((type_, reason, message))

    def reasons(self) -> list[str]:
        return [reason for _, reason, _ in self.events]
