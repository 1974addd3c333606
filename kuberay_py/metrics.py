"""The one Prometheus registry every kuberay_py component registers into.

Metric objects are module-level singletons (as in controller-runtime's ``metrics.Registry``), so
several managers in one process (tests, the demo) share them and label values keep them apart.
``disable_created_metrics`` is called before anything registers, otherwise prometheus_client adds
a ``*_created`` series to every counter and histogram, which controller-runtime does not expose.
"""

from __future__ import annotations

from prometheus_client import REGISTRY, CollectorRegistry, disable_created_metrics, generate_latest

disable_created_metrics()  # type: ignore[no-untyped-call]

registry: CollectorRegistry = REGISTRY

__all__ = ["exposition", "registry"]


def exposition() -> bytes:
    """The text exposition of every registered metric (what ``/metrics`` serves)."""
    return generate_latest(registry)
