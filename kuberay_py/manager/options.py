"""Manager options, with controller-runtime's (and KubeRay's ``main.go``) defaults."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kuberay_py.client.resources import Resource

__all__ = ["ManagerOptions"]


@dataclass
class ManagerOptions:
    """How a :class:`~kuberay_py.manager.Manager` serves, elects and shuts down.

    Bind addresses: ``":8080"`` (all interfaces), ``"127.0.0.1:0"`` (free port, see
    ``Manager.metrics_url``), ``"0"`` disables. Durations are seconds. A negative
    ``graceful_shutdown_timeout`` waits forever for in-flight reconciles, ``0`` cancels at once.
    ``leader_election_namespace=None`` means the Pod's own namespace when in-cluster; outside a
    cluster it must be given, as in controller-runtime.
    """

    metrics_bind_address: str = ":8080"
    health_probe_bind_address: str = ":8082"
    leader_election: bool = False
    leader_election_id: str = "kuberay-operator"
    leader_election_namespace: str | None = None
    leader_election_identity: str | None = None  # default: <hostname>_<uuid4>
    # controller-runtime defaults to False; we release on a clean shutdown so a rolling update
    # hands over at the successor's next retry instead of a whole lease duration later.
    leader_election_release_on_cancel: bool = True
    # Renew the Lease from a thread of its own (real clock only), so a saturated event loop does
    # not lose leadership; see kuberay_py/manager/lease_thread.py.
    leader_election_thread: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    graceful_shutdown_timeout: float = 30.0
    cache_sync_timeout: float = 120.0
    namespaces: list[str] | None = None
    cache_selectors: dict[Resource, str] | None = None
    # Per-resource cache transforms (controller-runtime's ByObject Transform); other resources get
    # managedFields stripped. Objects of a transformed resource are partial: patch, never update.
    cache_transforms: dict[Resource, Callable[[dict[str, Any]], dict[str, Any]]] | None = None
    sync_period: float | None = None
    event_buffer_size: int = 1000
    # Each controller's retry limiter: max(per-item 5 ms -> 1000 s, an overall token bucket of
    # reconcile_retry_qps / reconcile_retry_burst), client-go's default. qps 0 = per-item only
    # (controller-runtime's priority queue, what KubeRay runs on).
    reconcile_retry_qps: float = 10.0
    reconcile_retry_burst: int = 100
