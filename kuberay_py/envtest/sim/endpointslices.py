"""The EndpointSlice controller of the cluster simulator.

It keeps, for every Service with a selector, the ``discovery.k8s.io/v1`` EndpointSlices that
kube-controller-manager would keep (labels ``kubernetes.io/service-name`` and
``endpointslice.kubernetes.io/managed-by``, a controller owner reference to the Service,
``addressType: IPv4``), recomputed whenever a Service, a Pod or one of its slices changes.

The informer cache lags behind the controller's own writes, so, like the upstream
``EndpointSliceTracker``, it remembers what it last wrote and does not act on an older view of a
slice it has just created, updated or deleted (otherwise it would create duplicates).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from kuberay_py.cache import Cache
from kuberay_py.client import Client, Conflict, NotFound, resources
from kuberay_py.envtest.sim.dirtyset import DirtySet
from kuberay_py.envtest.sim.membership import ChangeHandler, services_selecting
from kuberay_py.envtest.sim.ownwrites import cache_lags
from kuberay_py.envtest.sim.slices import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
    SERVICE_NAME_LABEL,
    desired_slices,
    slice_labels,
)
from kuberay_py.log import get_logger

__all__ = ["EndpointSliceController"]

log = get_logger("kuberay_py.envtest.sim.endpointslices")

Key = tuple[str, str]


class EndpointSliceController:
    def __init__(self, client: Client, cache: Cache) -> None:
        self.client = client
        self.cache = cache
        self._queue: DirtySet[Key] = DirtySet(
            log, "endpointslice sync", lambda key: {"service": f"{key[0]}/{key[1]}"}, order=sorted
        )
        self._written: dict[Key, dict[str, Any]] = {}  # (ns, slice name) -> our last write
        self._deleted: set[Key] = set()
        self.reconciles = 0

    def register(self) -> None:
        self.cache.informer_for(resources.SERVICES).add_event_handler(ChangeHandler(self._service_changed))
        self.cache.informer_for(resources.PODS).add_event_handler(ChangeHandler(self._pod_changed))
        self.cache.informer_for(resources.ENDPOINTSLICES).add_event_handler(
            ChangeHandler(self._slice_changed)
        )

    # -- event routing -----------------------------------------------------------------------
    def _enqueue(self, key: Key) -> None:
        self._queue.mark(key)

    def _service_changed(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        meta = (new or old or {}).get("metadata", {})
        self._enqueue((meta.get("namespace", ""), meta.get("name", "")))

    def _pod_changed(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if not self.cache.informer_for(resources.SERVICES).has_synced():
            return  # the Services' initial adds will enqueue every Service anyway
        namespace = (new or old or {}).get("metadata", {}).get("namespace", "")
        for name in services_selecting(self.cache, namespace, [p for p in (old, new) if p is not None]):
            self._enqueue((namespace, name))

    def _slice_changed(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        obj = new or old or {}
        meta = obj.get("metadata", {})
        key = (meta.get("namespace", ""), meta.get("name", ""))
        if new is None:
            self._written.pop(key, None)
            self._deleted.discard(key)
        labels = meta.get("labels") or {}
        if labels.get(MANAGED_BY_LABEL) == MANAGED_BY and labels.get(SERVICE_NAME_LABEL):
            self._enqueue((key[0], labels[SERVICE_NAME_LABEL]))

    # -- worker ------------------------------------------------------------------------------
    async def run(self) -> None:
        # Reconciles read Services, Pods and slices from the cache: all three must have listed.
        await self.cache.wait_for_cache_sync()
        await self._queue.run(lambda key: self.reconcile(*key))

    def _existing(self, namespace: str, service: str) -> list[dict[str, Any]]:
        """Our slices for the Service: the cache's view, corrected by our own recent writes."""
        seen: dict[str, dict[str, Any]] = {}
        for obj in self.cache.list(resources.ENDPOINTSLICES, namespace, labels={SERVICE_NAME_LABEL: service}):
            if (obj.get("metadata", {}).get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY:
                seen[obj["metadata"]["name"]] = obj
        for (ns, name), mine in list(self._written.items()):
            if ns != namespace or (mine["metadata"].get("labels") or {}).get(SERVICE_NAME_LABEL) != service:
                continue
            if cache_lags(mine, seen.get(name)):
                seen[name] = mine
            else:
                del self._written[(ns, name)]  # the cache has caught up
        return [obj for name, obj in seen.items() if (namespace, name) not in self._deleted]

    async def reconcile(self, namespace: str, name: str) -> None:
        self.reconciles += 1
        service = self.cache.get(resources.SERVICES, name, namespace)
        existing = self._existing(namespace, name)
        spec = (service or {}).get("spec") or {}
        if service is None or not spec.get("selector") or spec.get("type") == "ExternalName":
            await self._delete(existing)
            return
        if (service.get("metadata") or {}).get("deletionTimestamp"):
            return
        desired = desired_slices(service, self.cache.list(resources.PODS, namespace))
        labels = slice_labels(service)
        owner = {
            "apiVersion": "v1",
            "kind": "Service",
            "name": name,
            "uid": service["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        unused = sorted(existing, key=lambda s: s["metadata"]["name"])
        plans: list[tuple[dict[str, Any] | None, list[dict[str, Any]], list[dict[str, Any]]]] = []
        leftover: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
        for ports, endpoints in desired:
            match = next((s for s in unused if (s.get("ports") or []) == ports), None)
            if match is not None:
                unused.remove(match)
                plans.append((match, ports, endpoints))
            else:
                leftover.append((ports, endpoints))
        for ports, endpoints in leftover:
            plans.append((unused.pop(0) if unused else None, ports, endpoints))
        for current, ports, endpoints in plans:
            await self._write(namespace, name, current, ports, endpoints, labels, owner)
        await self._delete(unused)

    async def _write(
        self,
        namespace: str,
        service: str,
        current: dict[str, Any] | None,
        ports: list[dict[str, Any]],
        endpoints: list[dict[str, Any]],
        labels: dict[str, str],
        owner: dict[str, Any],
    ) -> None:
        if current is None:
            body: dict[str, Any] = {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {
                    "generateName": f"{service}-",
                    "namespace": namespace,
                    "labels": labels,
                    "ownerReferences": [owner],
                },
                "addressType": "IPv4",
                "endpoints": endpoints,
                "ports": ports,
            }
            created = await self.client.create(resources.ENDPOINTSLICES, body, namespace)
            self._written[(namespace, created["metadata"]["name"])] = created
            return
        meta = current.get("metadata") or {}
        owners = meta.get("ownerReferences") or []
        same = (
            (current.get("endpoints") or []) == endpoints
            and (current.get("ports") or []) == ports
            and meta.get("labels") == labels
            and any(o.get("uid") == owner["uid"] for o in owners)
        )
        if same:
            return
        body = copy.deepcopy(current)
        body["metadata"]["labels"] = labels
        if not any(o.get("uid") == owner["uid"] for o in owners):
            body["metadata"]["ownerReferences"] = [o for o in owners if not o.get("controller")] + [owner]
        body["endpoints"] = endpoints
        body["ports"] = ports
        body["metadata"].pop("managedFields", None)
        try:
            updated = await self.client.update(resources.ENDPOINTSLICES, body)
        except NotFound:
            self._written.pop((namespace, meta["name"]), None)
            self._deleted.add((namespace, meta["name"]))
            raise
        except Conflict:
            self._written.pop((namespace, meta["name"]), None)
            raise
        self._written[(namespace, updated["metadata"]["name"])] = updated

    async def _delete(self, slices: Iterable[dict[str, Any]]) -> None:
        for obj in slices:
            meta = obj["metadata"]
            try:
                await self.client.delete(resources.ENDPOINTSLICES, meta["name"], meta.get("namespace"))
            except NotFound:
                pass
            self._written.pop((meta.get("namespace", ""), meta["name"]), None)
            self._deleted.add((meta.get("namespace", ""), meta["name"]))
