"""Serve config submission rules and the mapping of Serve statuses into the RayService status.

The operator remembers, per RayService and cluster, the serveConfigV2 it last submitted
successfully. That memory is deliberately volatile (an LRU, as KubeRay's): after an operator
restart nothing is remembered, so the config is submitted once more, which is harmless because
Ray's PUT is declarative. A dashboard that reports no applications (the head restarted without
GCS fault tolerance) also gets the config again.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from controllers import constants as c
from controllers.ray.serve_status import ServeDetails

__all__ = ["ServeConfigCache", "application_statuses", "needs_submit"]


class ServeConfigCache:
    """``(namespace/name) -> {cluster name: submitted serveConfigV2}``, bounded like KubeRay's (1000)."""

    def __init__(self, max_services: int = 1000) -> None:
        self._max = max_services
        self._data: OrderedDict[str, dict[str, str]] = OrderedDict()

    def get(self, key: str, cluster: str) -> str:
        per_service = self._data.get(key)
        if per_service is None:
            return ""
        self._data.move_to_end(key)
        return per_service.get(cluster, "")

    def put(self, key: str, cluster: str, config: str) -> None:
        per_service = self._data.setdefault(key, {})
        per_service[cluster] = config
        self._data.move_to_end(key)
        while len(self._data) > self._max:
            self._data.popitem(last=False)

    def retain(self, key: str, clusters: set[str]) -> None:
        """Forget configs of clusters that are neither active nor pending any more."""
        per_service = self._data.get(key)
        if per_service is None:
            return
        for name in [n for n in per_service if n not in clusters]:
            del per_service[name]

    def drop(self, key: str) -> None:
        self._data.pop(key, None)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data


def needs_submit(cached: str, current: str, details: ServeDetails) -> tuple[bool, str]:
    """KubeRay's checkIfNeedSubmitServeApplications, with its reasons."""
    if not cached:
        return True, "nothing has been submitted to this cluster by this operator process"
    if not details.applications:
        return True, "no Serve application found: the head Pod may have restarted without GCS FT"
    if cached != current:
        return True, "serveConfigV2 differs from the config last submitted"
    return False, "serveConfigV2 matches the config last submitted"


def application_statuses(details: ServeDetails) -> dict[str, Any]:
    """``applicationStatuses`` as the CRD spells it; the unnamed app is reported as ``default``."""
    out: dict[str, Any] = {}
    for name, app in details.applications.items():
        out[name or c.DEFAULT_SERVE_APP_NAME] = {
            "status": app.status,
            "message": app.message,
            "serveDeploymentStatuses": {
                dep_name: {"status": dep.status, "message": dep.message}
                for dep_name, dep in app.deployments.items()
            },
        }
    return out
