"""The Endpoints controller of the cluster simulator (kube-controller-manager's ``endpoint`` controller).

kube-apiserver resolves ``services/NAME/proxy`` through the Service's core/v1 Endpoints object, and
envtest has no kube-controller-manager to write it: without this controller every proxied request
to a simulated Pod is 404 ``services "NAME" not found`` on a real server. For every Service with a
selector (not ``ExternalName``) it keeps one Endpoints named after the Service, with the subsets
:func:`~kuberay_py.envtest.sim.subsets.desired_subsets` computes, the Service's labels (plus
``service.kubernetes.io/headless`` for a headless one) and the
``endpoints.kubernetes.io/last-change-trigger-time`` annotation; a Service without a selector
keeps whatever Endpoints its owner writes; a deleted Service's Endpoints is deleted, also one left
over from before the simulator started.

The informer cache lags behind the controller's own writes, so it remembers what it last wrote and
works from that when the cache still shows an older version (instead of failing on a conflict).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from kuberay_py.cache import Cache, FuncHandler
from kuberay_py.client import AlreadyExists, Conflict, Forbidden, NotFound, resources
from kuberay_py.clock import format_rfc3339
from kuberay_py.envtest.sim.dirtyset import DirtySet
from kuberay_py.envtest.sim.membership import ChangeHandler, selector_matches, services_selecting
from kuberay_py.envtest.sim.ownwrites import cache_lags
from kuberay_py.envtest.sim.subsets import (
    HEADLESS_LABEL,
    LAST_CHANGE_TRIGGER_TIME,
    MAX_CAPACITY,
    OVER_CAPACITY,
    TriggerTimeTracker,
    desired_subsets,
    endpoints_labels,
    truncate_subsets,
)
from kuberay_py.log import get_logger

__all__ = ["EndpointsController"]

log = get_logger("kuberay_py.envtest.sim.endpoints")

Key = tuple[str, str]
Obj = dict[str, Any]
LEADER_ANNOTATION = "control-plane.alpha.kubernetes.io/leader"  # leader-election records: never ours


def _rfc3339_nano(value: datetime) -> str:
    """Go's ``time.RFC3339Nano`` in UTC: whole seconds print as ``metav1.Time`` does."""
    if not value.microsecond:
        return format_rfc3339(value)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f").rstrip("0") + "Z"


class EndpointsController:
    def __init__(self, client: Any, cache: Cache) -> None:
        self.client = client
        self.cache = cache
        self._queue: DirtySet[Key] = DirtySet(
            log, "endpoints sync", lambda key: {"service": f"{key[0]}/{key[1]}"}, order=sorted
        )
        self._written: dict[Key, Obj] = {}  # (ns, name) -> our last write, until the cache has it
        self._triggers = TriggerTimeTracker()
        self.reconciles = 0

    def register(self) -> None:
        self.cache.informer_for(resources.SERVICES).add_event_handler(ChangeHandler(self._service_changed))
        self.cache.informer_for(resources.PODS).add_event_handler(ChangeHandler(self._pod_changed))
        self.cache.informer_for(resources.ENDPOINTS).add_event_handler(
            FuncHandler(on_add=self._endpoints_listed, on_delete=self._endpoints_deleted)
        )

    # -- event routing -----------------------------------------------------------------------
    def _service_changed(self, old: Obj | None, new: Obj | None) -> None:
        meta = (new or old or {}).get("metadata") or {}
        self._queue.mark((meta.get("namespace", ""), meta.get("name", "")))

    def _pod_changed(self, old: Obj | None, new: Obj | None) -> None:
        if not self.cache.informer_for(resources.SERVICES).has_synced():
            return  # the Services' initial adds will enqueue every Service anyway
        namespace = ((new or old or {}).get("metadata") or {}).get("namespace", "")
        for name in services_selecting(self.cache, namespace, [p for p in (old, new) if p is not None]):
            self._queue.mark((namespace, name))

    def _endpoints_listed(self, obj: Obj, is_initial: bool) -> None:
        """``checkLeftoverEndpoints``: what existed at start is checked once (its Service may be gone)."""
        meta = obj.get("metadata") or {}
        if is_initial and LEADER_ANNOTATION not in (meta.get("annotations") or {}):
            self._queue.mark((meta.get("namespace", ""), meta.get("name", "")))

    def _endpoints_deleted(self, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        key = (meta.get("namespace", ""), meta.get("name", ""))
        self._written.pop(key, None)
        self._queue.mark(key)  # recreated if its Service still wants it

    # -- worker ------------------------------------------------------------------------------
    async def run(self) -> None:
        await self.cache.wait_for_cache_sync()
        await self._queue.run(lambda key: self.reconcile(*key))

    def _current(self, namespace: str, name: str) -> Obj | None:
        cached = self.cache.get(resources.ENDPOINTS, name, namespace)
        mine = self._written.get((namespace, name))
        if mine is not None and cache_lags(mine, cached):
            return mine
        self._written.pop((namespace, name), None)  # the cache has caught up
        return cached

    async def reconcile(self, namespace: str, name: str) -> None:
        self.reconciles += 1
        service = self.cache.get(resources.SERVICES, name, namespace)
        if service is None:
            try:
                await self.client.delete(resources.ENDPOINTS, name, namespace)
            except NotFound:
                pass
            self._written.pop((namespace, name), None)
            self._triggers.forget(namespace, name)
            return
        spec = service.get("spec") or {}
        if spec.get("type") == "ExternalName" or not spec.get("selector"):
            return  # no endpoints from this controller; a selector-less Service's owner writes them
        selector = spec["selector"]
        pods = [
            p
            for p in self.cache.list(resources.PODS, namespace)
            if selector_matches(selector, (p.get("metadata") or {}).get("labels"))
        ]
        trigger = self._triggers.compute(namespace, service, pods)
        subsets = desired_subsets(service, pods)
        labels = endpoints_labels(service)
        current = self._current(namespace, name)
        if current is not None and self._up_to_date(current, subsets, service):
            return
        body: Obj = (
            copy.deepcopy(current)
            if current is not None
            else {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {"name": name, "namespace": namespace},
            }
        )
        meta = body["metadata"]
        meta.pop("managedFields", None)
        meta["labels"] = labels
        annotations = dict(meta.get("annotations") or {})
        if trigger is not None:
            annotations[LAST_CHANGE_TRIGGER_TIME] = _rfc3339_nano(trigger)
        else:
            annotations.pop(LAST_CHANGE_TRIGGER_TIME, None)
        if truncate_subsets(subsets):
            annotations[OVER_CAPACITY] = "truncated"
        else:
            annotations.pop(OVER_CAPACITY, None)
        meta["annotations"] = annotations
        if not annotations:
            meta.pop("annotations")
        body["subsets"] = subsets
        if not subsets:
            body.pop("subsets")
        await self._write(namespace, name, body, create=current is None)

    @staticmethod
    def _up_to_date(current: Obj, subsets: list[Obj], service: Obj) -> bool:
        labels = dict((current.get("metadata") or {}).get("labels") or {})
        labels.pop(HEADLESS_LABEL, None)
        annotations = (current.get("metadata") or {}).get("annotations") or {}
        count = sum(len(s.get("addresses") or []) + len(s.get("notReadyAddresses") or []) for s in subsets)
        capacity_ok = count <= MAX_CAPACITY and OVER_CAPACITY not in annotations
        return (
            (current.get("subsets") or []) == subsets
            and labels == ((service.get("metadata") or {}).get("labels") or {})
            and capacity_ok
        )

    async def _write(self, namespace: str, name: str, body: Obj, *, create: bool) -> None:
        key = (namespace, name)
        try:
            if create:
                written = await self.client.create(resources.ENDPOINTS, body, namespace)
            else:
                written = await self.client.update(resources.ENDPOINTS, body)
        except Forbidden as exc:
            causes = ((exc.body or {}).get("details") or {}).get("causes") or []
            if create and any(c.get("type") == "NamespaceTerminating" for c in causes):
                return  # creates keep failing in a terminating namespace: drop it, as upstream
            raise
        except (AlreadyExists, Conflict, NotFound):
            self._written.pop(key, None)  # our view was stale: re-read on the retry
            raise
        self._written[key] = written
