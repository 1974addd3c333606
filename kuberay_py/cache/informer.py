"""A shared informer: reflector(s) + store + event handlers + periodic resync.

One informer serves every controller interested in a resource, so the API server sees one watch
per (resource, namespace, selector) however many controllers run (client-go's
``SharedIndexInformer``). Watching several namespaces runs one reflector per namespace feeding the
same store (controller-runtime's multi-namespace cache); each reflector's relist diff only
touches its own namespace.

Handlers are called synchronously, in event order, on the event loop; they must not block (in a
controller they map the object to a key and enqueue it). A handler that raises is logged and
skipped; it cannot stop the informer or other handlers.

Every object is passed through the informer's ``transform`` (default: strip ``managedFields``; see
:mod:`kuberay_py.cache.transform`) as it arrives from a list, a watch event or a relist, before it
is stored, diffed or handed to a handler: the store only ever holds transformed objects.

``is_initial`` is true for adds that come from the first list (and for the replay a handler gets
when it is added after the informer synced); controller-runtime's priority queue uses it to put
start-up work behind live changes. A resync re-delivers every cached object as ``on_update(obj,
obj)`` from memory, without touching the API server.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import anyio

from kuberay_py.cache.reflector import Reflector
from kuberay_py.cache.store import Store, object_key
from kuberay_py.cache.transform import Transform, safe_transform, strip_managed_fields
from kuberay_py.client import Client, Resource
from kuberay_py.clock import Clock, RealClock
from kuberay_py.log import get_logger
from kuberay_py.objects import Obj

__all__ = ["EventHandler", "FuncHandler", "Informer"]

log = get_logger("kuberay_py.cache.informer")


@runtime_checkable
class EventHandler(Protocol):
    """Receives an informer's changes; synchronous and non-blocking."""

    def on_add(self, obj: Obj, is_initial: bool) -> None: ...

    def on_update(self, old: Obj, new: Obj) -> None: ...

    def on_delete(self, obj: Obj) -> None: ...


class FuncHandler:
    """An :class:`EventHandler` from optional callables, for handlers that care about one event."""

    def __init__(
        self,
        on_add: Any = None,
        on_update: Any = None,
        on_delete: Any = None,
    ) -> None:
        self._add = on_add
        self._update = on_update
        self._delete = on_delete

    def on_add(self, obj: Obj, is_initial: bool) -> None:
        if self._add is not None:
            self._add(obj, is_initial)

    def on_update(self, old: Obj, new: Obj) -> None:
        if self._update is not None:
            self._update(old, new)

    def on_delete(self, obj: Obj) -> None:
        if self._delete is not None:
            self._delete(obj)


def _rv(obj: Obj) -> Any:
    return (obj.get("metadata") or {}).get("resourceVersion")


class Informer:
    """Keeps a :class:`Store` of ``res`` in sync and tells handlers about every change."""

    def __init__(
        self,
        client: Client,
        res: Resource,
        *,
        namespace: str | None = None,
        namespaces: Sequence[str] | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        resync_period: float | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        transform: Transform | None = strip_managed_fields,
    ) -> None:
        if namespace is not None and namespaces is not None:
            raise ValueError("pass namespace or namespaces, not both")
        self.client = client
        self.res = res
        self.label_selector = label_selector
        self.store = Store()
        self._clock = clock or RealClock()
        self._rng = rng or random.Random()
        self._handlers: list[EventHandler] = []
        scopes: list[str | None]
        if not res.namespaced:
            scopes = [None]
        elif namespaces:
            scopes = list(dict.fromkeys(namespaces))
        else:
            scopes = [namespace]
        self.namespaces: tuple[str, ...] | None = (
            tuple(s for s in scopes if s is not None) if scopes != [None] else None
        )
        self._synced = asyncio.Event()
        self.transform = transform
        applied = safe_transform(transform, str(res))
        self.reflectors = [
            Reflector(
                client,
                res,
                self,
                namespace=scope,
                label_selector=label_selector,
                field_selector=field_selector,
                clock=self._clock,
                rng=self._rng,
                on_synced=self._check_synced,
                transform=applied,
            )
            for scope in scopes
        ]
        # controller-runtime jitters each informer's resync period by [0.9, 1.1) so that
        # resyncs of many informers do not line up.
        self.resync_period = resync_period * self._rng.uniform(0.9, 1.1) if resync_period else None
        self._log = log.bind(resource=str(res), selector=label_selector)

    # -- public ----------------------------------------------------------------------------------

    def add_event_handler(self, handler: EventHandler) -> None:
        """Register a handler; if the store already holds objects they are replayed as initial adds."""
        self._handlers.append(handler)
        for obj in self.store.list():
            self._call(handler, "on_add", obj, True)

    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_for_sync(self) -> None:
        await self._synced.wait()

    async def run(self) -> None:
        """Run the reflectors (and the resync timer) until cancelled."""
        async with anyio.create_task_group() as tg:
            for reflector in self.reflectors:
                tg.start_soon(reflector.run)
            if self.resync_period:
                tg.start_soon(self._resync_loop)

    def resync(self) -> None:
        """Re-deliver every cached object as an update with ``old is new``."""
        for obj in self.store.list():
            self._dispatch("on_update", obj, obj)

    # -- reflector sink --------------------------------------------------------------------------

    def replace(self, items: list[Obj], namespace: str | None, is_initial: bool) -> None:
        """Make the store's ``namespace`` scope equal ``items``, delivering only the differences."""
        fresh = {object_key(obj): obj for obj in items}
        for key in list(self.store.scope_keys(namespace)):
            if key not in fresh:
                gone = self.store.remove(key)
                if gone is not None:
                    self._dispatch("on_delete", gone)
        for key, obj in fresh.items():
            old = self.store.get(key)
            if old is None:
                self.store.upsert(obj)
                self._dispatch("on_add", obj, is_initial)
            elif _rv(old) != _rv(obj):
                self.store.upsert(obj)
                self._dispatch("on_update", old, obj)

    def upsert(self, obj: Obj) -> None:
        old = self.store.upsert(obj)
        if old is None:
            self._dispatch("on_add", obj, False)
        else:
            self._dispatch("on_update", old, obj)

    def delete(self, obj: Obj) -> None:
        # The DELETED event carries the object's final state; that is what handlers get.
        self.store.remove(object_key(obj))
        self._dispatch("on_delete", obj)

    # -- internals -------------------------------------------------------------------------------

    def _check_synced(self) -> None:
        if all(r.synced for r in self.reflectors):
            self._synced.set()

    def _dispatch(self, method: str, *args: Any) -> None:
        for handler in self._handlers:
            self._call(handler, method, *args)

    def _call(self, handler: EventHandler, method: str, *args: Any) -> None:
        try:
            getattr(handler, method)(*args)
        except Exception:
            obj = args[-1] if method != "on_add" else args[0]
            self._log.exception(
                "event_handler_failed", handler=repr(handler), method=method, key=object_key(obj)
            )

    async def _resync_loop(self) -> None:
        assert self.resync_period
        await self._synced.wait()
        while True:
            await self._clock.sleep(self.resync_period)
            self.resync()
