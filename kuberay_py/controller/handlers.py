"""Turning informer events into queued requests (controller-runtime's ``pkg/handler``).

Three mappings cover what a controller watches:

* :func:`request_for_object` — the object itself (``for_``);
* :func:`requests_for_owner` — its controlling owner, if that owner is of the controller's kind
  (``owns``): the owner reference's group and kind must match (version and UID are ignored, as
  in ``EnqueueRequestForOwner``), and by default only the ``controller: true`` reference counts;
* any ``map_fn(obj) -> list[Request]`` (``watches``).

:class:`EnqueueHandler` applies the predicates, maps, and adds to the queue with controller-runtime's
priorities: objects from an informer's initial list, and resync updates (same resourceVersion on
both sides), go in at ``LOW_PRIORITY`` so they queue behind live changes. Handlers run inside the
informer's dispatch, so they must never raise: a failing predicate or map function is logged with
its traceback and the event is skipped for this controller only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from kuberay_py.client.resources import Resource
from kuberay_py.controller.predicates import Predicate
from kuberay_py.controller.reconcile import Request
from kuberay_py.log import get_logger
from kuberay_py.workqueue import LOW_PRIORITY, RateLimitingQueue

__all__ = [
    "CacheLike",
    "EnqueueHandler",
    "InformerLike",
    "MapFn",
    "request_for_object",
    "requests_for_owner",
]

Obj = Mapping[str, Any]
MapFn = Callable[[Obj], Sequence[Request]]


class InformerLike(Protocol):
    """What a controller needs from :class:`kuberay_py.cache.Informer`."""

    def add_event_handler(self, handler: Any) -> Any: ...
    def has_synced(self) -> bool: ...
    async def wait_for_sync(self) -> Any: ...


class CacheLike(Protocol):
    """What a controller needs from :class:`kuberay_py.cache.Cache`."""

    def informer_for(self, res: Resource) -> Any: ...


def request_for_object(obj: Obj) -> list[Request]:
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not name:
        return []
    return [Request(str(meta.get("namespace") or ""), str(name))]


def _group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def requests_for_owner(owner: Resource, *, only_controller: bool = True) -> MapFn:
    """Map an owned object to its owner(s) of kind ``owner``. Cluster-scoped owners get namespace ""."""
    group, kind = owner.group, owner.kind

    def mapper(obj: Obj) -> list[Request]:
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or "") if owner.namespaced else ""
        out: list[Request] = []
        for ref in meta.get("ownerReferences") or ():
            if only_controller and not ref.get("controller"):
                continue
            if ref.get("kind") != kind or _group_of(str(ref.get("apiVersion", ""))) != group:
                continue
            if ref.get("name"):
                out.append(Request(namespace, str(ref["name"])))
        return out

    return mapper


def _rv(obj: Obj) -> Any:
    return (obj.get("metadata") or {}).get("resourceVersion")


class EnqueueHandler:
    """An informer event handler feeding one controller's queue."""

    def __init__(
        self,
        controller: str,
        source: str,
        queue: RateLimitingQueue[Request],
        mapper: MapFn,
        predicates: Sequence[Predicate] = (),
        *,
        map_old_on_update: bool = True,
    ) -> None:
        self.controller = controller
        self.source = source
        self.queue = queue
        self.mapper = mapper
        self.predicates = tuple(predicates)
        # EnqueueRequestForObject maps only the new object on update; owner and map-func
        # handlers map both, so a changed owner reference wakes the old owner as well.
        self.map_old_on_update = map_old_on_update

    def on_add(self, obj: dict[str, Any], is_initial: bool = False) -> None:
        try:
            if all(p.create(obj) for p in self.predicates):
                self._enqueue(self.mapper(obj), LOW_PRIORITY if is_initial else 0)
        except Exception:
            self._failed("add", obj)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        try:
            if not all(p.update(old, new) for p in self.predicates):
                return
            requests = list(self.mapper(new))
            if self.map_old_on_update:
                requests.extend(self.mapper(old))
            self._enqueue(requests, LOW_PRIORITY if _rv(old) == _rv(new) else 0)
        except Exception:
            self._failed("update", new)

    def on_delete(self, obj: dict[str, Any]) -> None:
        try:
            if all(p.delete(obj) for p in self.predicates):
                self._enqueue(self.mapper(obj), 0)
        except Exception:
            self._failed("delete", obj)

    def _enqueue(self, requests: Sequence[Request], priority: int) -> None:
        add = self.queue.add
        for request in requests:
            if not isinstance(request, Request):
                raise TypeError(f"map function returned {request!r}, expected Request")
            add(request, priority=priority)

    def _failed(self, event: str, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        get_logger("kuberay_py.controller").error(
            "event handler failed; event skipped for this controller",
            controller=self.controller,
            source=self.source,
            event_kind=event,
            namespace=meta.get("namespace"),
            name=meta.get("name"),
            exc_info=True,
        )
