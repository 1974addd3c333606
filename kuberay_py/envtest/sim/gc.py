"""Owner-reference garbage collection, as kube-controller-manager's garbage collector does it.

It discovers every listable, watchable, deletable resource (re-discovering when CRDs change),
watches them all and keeps a graph from owner UIDs to dependents. Then:

* a dependent whose owners are all gone (checked against the API, not only the cache, since
  informers lag) is deleted with ``propagationPolicy=Background``; dangling references next to a
  live owner are removed from the dependent instead;
* an owner deleted with ``propagationPolicy=Orphan`` carries the ``orphan`` finalizer: its
  dependents lose their reference to it, then the finalizer is removed;
* an owner deleted with ``propagationPolicy=Foreground`` carries ``foregroundDeletion``: its
  dependents are deleted (foreground again, so the cascade is depth-first) and the finalizer is
  removed once no dependent with ``blockOwnerDeletion`` is left.

Events (core and ``events.k8s.io``) are not watched: they never own anything and are the bulk of
a busy cluster's writes. Deliberate difference from upstream, recorded in docs/simulator.md.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any, Literal

from kuberay_py.cache import Cache
from kuberay_py.client import ApiError, Client, Conflict, NotFound, Resource, resources
from kuberay_py.envtest.sim.dirtyset import DirtySet
from kuberay_py.log import get_logger

__all__ = ["GarbageCollector", "discover_resources"]

log = get_logger("kuberay_py.envtest.sim.gc")

ORPHAN = "orphan"
FOREGROUND = "foregroundDeletion"
_SKIP = {("", "events"), ("events.k8s.io", "events")}


async def discover_resources(client: Client) -> list[Resource]:
    """Every preferred-version resource that supports list, watch and delete (the GC's view)."""
    found: list[Resource] = []

    def collect(group: str, version: str, doc: dict[str, Any]) -> None:
        for r in doc.get("resources") or []:
            name = r.get("name", "")
            verbs = set(r.get("verbs") or [])
            if "/" in name or not {"list", "watch", "delete"} <= verbs or (group, name) in _SKIP:
                continue
            found.append(Resource(group, version, r.get("kind", ""), name, bool(r.get("namespaced"))))

    collect("", "v1", await client.request("GET", "/api/v1"))
    groups = await client.request("GET", "/apis")
    for g in groups.get("groups") or []:
        preferred = (g.get("preferredVersion") or {}).get("groupVersion") or g["versions"][0]["groupVersion"]
        try:
            doc = await client.request("GET", f"/apis/{preferred}")
        except NotFound:
            continue  # a CRD group whose version is not served yet
        group, _, version = preferred.partition("/")
        collect(group, version, doc)
    return found


class _Watch:
    def __init__(self, gc: GarbageCollector, res: Resource) -> None:
        self.gc, self.res = gc, res

    def on_add(self, obj: dict[str, Any], is_initial: bool) -> None:
        self.gc._observe(self.res, obj)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.gc._observe(self.res, new)

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.gc._forget(obj)


class _CrdWatch:
    def __init__(self, gc: GarbageCollector) -> None:
        self.gc = gc

    def on_add(self, obj: dict[str, Any], is_initial: bool) -> None:
        self.gc._rediscover.set()

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if old.get("status") != new.get("status"):
            self.gc._rediscover.set()

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.gc._rediscover.set()


class GarbageCollector:
    def __init__(self, client: Client, cache: Cache) -> None:
        self.client = client
        self.cache = cache
        self._watched: set[Resource] = set()
        self._by_kind: dict[tuple[str, str], Resource] = {}
        self._objects: dict[str, tuple[Resource, dict[str, Any]]] = {}  # uid -> (resource, object)
        self._dependents: dict[str, set[str]] = defaultdict(set)  # owner uid -> dependent uids
        self._queue: DirtySet[str] = DirtySet(log, "garbage collection step", lambda uid: {"uid": uid})
        self._rediscover = asyncio.Event()
        self.deleted: list[tuple[str, str, str]] = []  # (kind, namespace, name) it deleted, for tests

    async def register(self) -> None:
        await self._discover()
        self.cache.informer_for(resources.CRDS).add_event_handler(_CrdWatch(self))

    async def _discover(self) -> None:
        for res in await discover_resources(self.client):
            self._by_kind[(res.group, res.kind)] = res
            if res not in self._watched:
                self._watched.add(res)
                self.cache.informer_for(res).add_event_handler(_Watch(self, res))

    # -- graph -------------------------------------------------------------------------------
    def _mark(self, uid: str) -> None:
        self._queue.mark(uid)

    def _observe(self, res: Resource, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        uid = meta.get("uid", "")
        previous = self._objects.get(uid)
        old_owners = (
            {o.get("uid") for o in (previous[1]["metadata"].get("ownerReferences") or [])}
            if previous
            else set()
        )
        owners = {o.get("uid", "") for o in meta.get("ownerReferences") or []}
        for gone in old_owners - owners:
            self._dependents[gone or ""].discard(uid)
        for owner in owners:
            self._dependents[owner].add(uid)
        self._objects[uid] = (res, obj)
        if owners and owners != old_owners:
            self._mark(uid)
        finalizers = set(meta.get("finalizers") or [])
        if meta.get("deletionTimestamp") and finalizers & {ORPHAN, FOREGROUND}:
            self._mark(uid)

    def _forget(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        uid = meta.get("uid", "")
        self._objects.pop(uid, None)
        for owner in meta.get("ownerReferences") or []:
            deps = self._dependents.get(owner.get("uid", ""))
            if deps is not None:
                deps.discard(uid)
            if owner.get("uid") in self._objects:
                self._mark(owner["uid"])  # a foreground-deleting owner may now be finalizable
        for dep in self._dependents.pop(uid, set()):
            self._mark(dep)

    # -- worker ------------------------------------------------------------------------------
    async def run(self) -> None:
        async def rediscover() -> None:
            while True:
                await self._rediscover.wait()
                self._rediscover.clear()
                try:
                    await self._discover()
                except (ApiError, OSError) as exc:
                    log.info("rediscovery failed", error=str(exc))

        task = asyncio.get_running_loop().create_task(rediscover())
        try:
            # Owners are looked up in the graph first and only then with a GET: let every informer
            # list once, or a start-up with many objects would GET each one's owner.
            await self.cache.wait_for_cache_sync()
            await self._queue.run(self._process)
        finally:
            task.cancel()

    async def _process(self, uid: str) -> None:
        entry = self._objects.get(uid)
        if entry is None:
            return
        res, obj = entry
        meta = obj["metadata"]
        finalizers = meta.get("finalizers") or []
        if meta.get("deletionTimestamp") and ORPHAN in finalizers:
            await self._orphan_dependents(uid)
            await self._remove_finalizer(res, obj, ORPHAN)
            return
        if meta.get("deletionTimestamp") and FOREGROUND in finalizers:
            await self._foreground(res, obj)
            return
        refs = meta.get("ownerReferences") or []
        if refs:
            await self._check_owners(res, obj, refs)

    async def _owner_state(self, namespace: str | None, ref: dict[str, Any]) -> str:
        """ "present", "absent", "deleting" (foreground) or "unknown" (kind not served)."""
        known = self._objects.get(ref.get("uid", ""))
        owner: dict[str, Any] | None = known[1] if known else None
        if owner is None:
            group = ref.get("apiVersion", "").rpartition("/")[0] if "/" in ref.get("apiVersion", "") else ""
            res = self._by_kind.get((group, ref.get("kind", "")))
            if res is None:
                return "unknown"
            try:
                owner = await self.client.get(res, ref.get("name", ""), namespace if res.namespaced else None)
            except NotFound:
                return "absent"
            if owner["metadata"].get("uid") != ref.get("uid"):
                return "absent"
        meta = owner["metadata"]
        if meta.get("deletionTimestamp") and FOREGROUND in (meta.get("finalizers") or []):
            return "deleting"
        return "present"

    async def _check_owners(self, res: Resource, obj: dict[str, Any], refs: list[dict[str, Any]]) -> None:
        meta = obj["metadata"]
        namespace = meta.get("namespace")
        states = [await self._owner_state(namespace, r) for r in refs]
        if "unknown" in states or meta.get("deletionTimestamp"):
            return
        if all(s in ("absent", "deleting") for s in states):
            await self._delete(res, obj, "Foreground" if "deleting" in states else "Background")
        elif "absent" in states:
            keep = [r for r, s in zip(refs, states, strict=True) if s != "absent"]
            await self._patch_owners(res, obj, keep)

    async def _delete(
        self, res: Resource, obj: dict[str, Any], policy: Literal["Foreground", "Background"]
    ) -> None:
        meta = obj["metadata"]
        try:
            await self.client.delete(
                res,
                meta["name"],
                meta.get("namespace"),
                propagation_policy=policy,
                preconditions={"uid": meta["uid"]},
            )
            self.deleted.append((res.kind, meta.get("namespace", ""), meta["name"]))
            log.info("garbage collected", kind=res.kind, namespace=meta.get("namespace"), name=meta["name"])
        except (NotFound, Conflict):
            pass

    async def _patch_owners(self, res: Resource, obj: dict[str, Any], keep: list[dict[str, Any]]) -> None:
        meta = obj["metadata"]
        patch = {"metadata": {"ownerReferences": keep or None, "uid": meta["uid"]}}
        try:
            await self.client.patch(res, meta["name"], patch, meta.get("namespace"), patch_type="merge")
        except NotFound:
            pass

    async def _orphan_dependents(self, owner_uid: str) -> None:
        for dep_uid in list(self._dependents.get(owner_uid, ())):
            entry = self._objects.get(dep_uid)
            if entry is None:
                continue
            res, dep = entry
            keep = [r for r in dep["metadata"].get("ownerReferences") or [] if r.get("uid") != owner_uid]
            await self._patch_owners(res, dep, keep)

    async def _foreground(self, res: Resource, obj: dict[str, Any]) -> None:
        uid = obj["metadata"]["uid"]
        blocking = 0
        for dep_uid in list(self._dependents.get(uid, ())):
            entry = self._objects.get(dep_uid)
            if entry is None:
                continue
            dep_res, dep = entry
            ref: dict[str, Any] = next(
                (r for r in dep["metadata"].get("ownerReferences") or [] if r.get("uid") == uid), {}
            )
            if ref.get("blockOwnerDeletion"):
                blocking += 1
            if not dep["metadata"].get("deletionTimestamp"):
                await self._delete(dep_res, dep, "Foreground")
        if blocking == 0:
            await self._remove_finalizer(res, obj, FOREGROUND)

    async def _remove_finalizer(self, res: Resource, obj: dict[str, Any], finalizer: str) -> None:
        meta = obj["metadata"]
        for _ in range(5):
            finalizers = [f for f in meta.get("finalizers") or [] if f != finalizer]
            patch = {
                "metadata": {"finalizers": finalizers or None, "resourceVersion": meta["resourceVersion"]}
            }
            try:
                await self.client.patch(res, meta["name"], patch, meta.get("namespace"), patch_type="merge")
                return
            except NotFound:
                return
            except Conflict:
                try:
                    fresh = await self.client.get(res, meta["name"], meta.get("namespace"))
                except NotFound:
                    return
                meta = fresh["metadata"]
                if finalizer not in (meta.get("finalizers") or []):
                    return
