"""Which Pods back a Service, as both of kube-controller-manager's endpoint controllers decide it.

The Endpoints controller (``pkg/controller/endpoint``) and the EndpointSlice controller
(``pkg/controller/endpointslice``) share these rules upstream (``endpointslice/util``,
``podutil.FindPort``), so the simulator's two controllers share them here: which Pods a selector
picks, whether a Pod is listed at all, whether it is ready, and which port number a Service
port's ``targetPort`` means on a given Pod. Both controllers also recompute a Service when any
Pod its selector matches (before or after the change) changes, which :func:`services_selecting`
answers from the informer cache.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kuberay_py.cache import Cache
from kuberay_py.client import resources

__all__ = [
    "ChangeHandler",
    "find_port",
    "pod_in_endpoints",
    "pod_ready",
    "selector_matches",
    "services_selecting",
]

Obj = dict[str, Any]


def selector_matches(selector: dict[str, str], labels: dict[str, str] | None) -> bool:
    labels = labels or {}
    return all(labels.get(k) == v for k, v in selector.items())


def pod_ready(pod: Obj) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def pod_in_endpoints(pod: Obj, *, include_terminating: bool) -> bool:
    """``ShouldPodBeInEndpoints``: not terminal, has an address, and not terminating unless asked.

    The EndpointSlice controller includes terminating Pods (flagged ``terminating``); the
    Endpoints controller includes them only for a Service that publishes not-ready addresses.
    """
    status = pod.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return False
    if not status.get("podIP") and not status.get("podIPs"):
        return False
    return include_terminating or not (pod.get("metadata") or {}).get("deletionTimestamp")


def find_port(pod: Obj, target: Any, protocol: str) -> int | None:
    """``podutil.FindPort``: a number is used as is; a name is looked up in the Pod's containers."""
    if isinstance(target, int):
        return target
    if isinstance(target, str):
        if target.isdigit():
            return int(target)
        for container in (pod.get("spec") or {}).get("containers") or []:
            for port in container.get("ports") or []:
                if port.get("name") == target and port.get("protocol", "TCP") == protocol:
                    value = port.get("containerPort")
                    return value if isinstance(value, int) else None
    return None


def services_selecting(cache: Cache, namespace: str, pods: list[Obj]) -> list[str]:
    """Names of the Services in ``namespace`` whose selector matches any of ``pods``' labels."""
    label_sets = [(p.get("metadata") or {}).get("labels") or {} for p in pods]
    names = []
    for svc in cache.list(resources.SERVICES, namespace):
        selector = (svc.get("spec") or {}).get("selector")
        if selector and any(selector_matches(selector, labels) for labels in label_sets):
            names.append(svc["metadata"]["name"])
    return names


class ChangeHandler:
    """An informer event handler calling ``on_change(old, new)``: ``old`` None on add, ``new`` on delete."""

    def __init__(self, on_change: Callable[[Obj | None, Obj | None], None]) -> None:
        self._on_change = on_change

    def on_add(self, obj: Obj, is_initial: bool) -> None:
        self._on_change(None, obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        self._on_change(old, new)

    def on_delete(self, obj: Obj) -> None:
        self._on_change(obj, None)
