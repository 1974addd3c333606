"""The manager's cache: shared informers created on demand, and reads that never hit the network.

Like controller-runtime's ``cache.Cache``: a controller asks for ``informer_for(PODS)`` while it
is being built, the manager runs the cache and waits for every informer's first list, and from
then on reconcilers read Pods from memory. The cache can be restricted to namespaces (one
reflector per namespace, merged) and, per resource, to a label selector: KubeRay only caches Pods
labelled ``ray.io/node-type``, which keeps the operator's memory proportional to Ray Pods, not to
every Pod in the cluster. Objects outside the selector are invisible to ``get``/``list``.

Per resource, a transform (``transforms``; default :func:`strip_managed_fields` for every other
resource) shrinks each object before it is stored, like controller-runtime's ``ByObject[...].Transform``
and ``DefaultTransform``. Objects read from such a cache are partial: patch them, never ``update``.

Reads from an informer that has not finished its first list raise :class:`CacheNotSynced` rather
than answering from a partial store: a reconciler that saw "no Pods" there would create duplicates.
"""

from __future__ import annotations

import asyncio
import builtins
import random
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.abc

from kuberay_py.cache.informer import Informer
from kuberay_py.cache.store import INDEX_NAMESPACE, INDEX_OWNER, label_index
from kuberay_py.cache.transform import Transform, strip_managed_fields
from kuberay_py.client import Client, Resource
from kuberay_py.clock import Clock, RealClock
from kuberay_py.objects import Obj

__all__ = ["Cache", "CacheNotSynced"]


class CacheNotSynced(RuntimeError):
    """A read reached an informer whose first list has not completed."""


class Cache:
    """Shared informers keyed by (resource, namespaces, label selector), plus cached reads."""

    def __init__(
        self,
        client: Client,
        *,
        namespaces: Sequence[str] | None = None,
        selectors: dict[Resource, str] | None = None,
        transforms: dict[Resource, Transform] | None = None,
        default_transform: Transform | None = strip_managed_fields,
        resync_period: float | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.namespaces: tuple[str, ...] | None = tuple(dict.fromkeys(namespaces)) if namespaces else None
        self.selectors = dict(selectors or {})
        # A resource's own transform replaces the default (controller-runtime's ByObject rule).
        self.transforms = dict(transforms or {})
        self.default_transform = default_transform
        self.resync_period = resync_period
        self._clock = clock or RealClock()
        self._rng = rng or random.Random()
        self._informers: dict[tuple[Resource, tuple[str, ...] | None, str | None], Informer] = {}
        self._tg: anyio.abc.TaskGroup | None = None

    # -- informers -------------------------------------------------------------------------------

    def informer_for(self, res: Resource) -> Informer:
        """The shared informer for ``res``; created (and started, if the cache runs) on first use."""
        namespaces = self.namespaces if res.namespaced else None
        selector = self.selectors.get(res)
        key = (res, namespaces, selector)
        informer = self._informers.get(key)
        if informer is None:
            informer = Informer(
                self.client,
                res,
                namespaces=namespaces,
                label_selector=selector,
                resync_period=self.resync_period,
                clock=self._clock,
                rng=self._rng,
                transform=self.transforms.get(res, self.default_transform),
            )
            self._informers[key] = informer
            if self._tg is not None:
                self._tg.start_soon(informer.run)
        return informer

    @property
    def informers(self) -> list[Informer]:
        return list(self._informers.values())

    async def run(self) -> None:
        """Run every informer, including ones requested later, until cancelled."""
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                for informer in self._informers.values():
                    tg.start_soon(informer.run)
                await anyio.sleep_forever()
        finally:
            self._tg = None

    def has_synced(self) -> bool:
        return all(i.has_synced() for i in self._informers.values())

    async def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        """Wait until every informer created so far has listed once; ``False`` on timeout."""
        pending = [i for i in self._informers.values() if not i.has_synced()]
        if not pending:
            return True
        waiter: asyncio.Future[Any] = asyncio.ensure_future(
            asyncio.gather(*(i.wait_for_sync() for i in pending))
        )
        if timeout is None:
            await waiter
            return True
        timer: asyncio.Future[Any] = asyncio.ensure_future(self._clock.sleep(timeout))
        try:
            await asyncio.wait({waiter, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for fut in (waiter, timer):
                if not fut.done():
                    fut.cancel()
        return self.has_synced()

    # -- reads -----------------------------------------------------------------------------------

    def _synced(self, res: Resource, namespace: str | None) -> Informer:
        if res.namespaced and namespace is not None and self.namespaces and namespace not in self.namespaces:
            raise ValueError(
                f"namespace {namespace!r} is not watched by this cache (watching {list(self.namespaces)})"
            )
        informer = self.informer_for(res)
        if not informer.has_synced():
            raise CacheNotSynced(f"the {res} informer has not synced yet; wait_for_cache_sync() first")
        return informer

    def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None:
        """The cached object, or ``None``. Never a network call."""
        if res.namespaced and not namespace:
            raise ValueError(f"get {res.kind} needs a namespace")
        informer = self._synced(res, namespace)
        return informer.store.get(f"{namespace}/{name}" if res.namespaced else name)

    def list(
        self, res: Resource, namespace: str | None = None, *, labels: dict[str, str] | None = None
    ) -> builtins.list[Obj]:
        """Cached objects in ``namespace`` (all when ``None``) whose labels include ``labels``.

        The first label is served from a label index (built on first use), the namespace from
        the namespace index; only the remaining labels are checked object by object.
        """
        store = self._synced(res, namespace).store
        ns = namespace if res.namespaced else None
        if labels:
            first_key, first_value = next(iter(labels.items()))
            store.add_label_index(first_key)
            keys = store.index_keys(label_index(first_key), first_value)
            if ns is not None:
                keys = _in_namespace(keys, ns)
        elif ns is not None:
            keys = store.index_keys(INDEX_NAMESPACE, ns)
        else:
            keys = set(store.keys())
        out: builtins.list[Obj] = []
        for key in sorted(keys):
            obj = store.get(key)
            if obj is None:
                continue
            if labels and not _has_labels(obj, labels):
                continue
            out.append(obj)
        return out

    def list_owned(self, res: Resource, owner_uid: str, namespace: str | None = None) -> builtins.list[Obj]:
        """Cached objects whose controlling owner reference has ``owner_uid``."""
        store = self._synced(res, namespace).store
        keys = store.index_keys(INDEX_OWNER, owner_uid)
        if namespace is not None and res.namespaced:
            keys = _in_namespace(keys, namespace)
        return [obj for key in sorted(keys) if (obj := store.get(key)) is not None]


def _in_namespace(keys: set[str], namespace: str) -> set[str]:
    """The keys of ``namespace``'s objects. A key is ``namespace/name`` and neither part holds a
    "/", so this reads only the few keys already selected; intersecting with the namespace index
    copied that whole index, every Pod of the namespace, on every reconcile's list."""
    prefix = namespace + "/"
    return {key for key in keys if key.startswith(prefix)}


def _has_labels(obj: Obj, labels: dict[str, str]) -> bool:
    have = (obj.get("metadata") or {}).get("labels") or {}
    return all(have.get(k) == v for k, v in labels.items())
