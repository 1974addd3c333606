"""The Manager of every operator a test runs on its own event loop.

No listening ports (a test process may run several operators), the RayCluster controller's cache
selectors and transforms (what the real operator's cache holds), and a short graceful shutdown so
a test's teardown stays bounded.
"""

from __future__ import annotations

from controllers.raycluster.setup import cache_selectors, cache_transforms
from kuberay_py.client import ClientConfig
from kuberay_py.clock import Clock
from kuberay_py.manager import Manager, ManagerOptions

__all__ = ["in_loop_manager"]

GRACEFUL_SHUTDOWN = 5.0


def in_loop_manager(
    config: ClientConfig, *, clock: Clock | None = None, namespaces: list[str] | None = None
) -> Manager:
    """``namespaces`` limits what it watches (e.g. two operators with different gates side by side)."""
    options = ManagerOptions(
        metrics_bind_address="0",
        health_probe_bind_address="0",
        cache_selectors=cache_selectors(),
        cache_transforms=cache_transforms(),
        graceful_shutdown_timeout=GRACEFUL_SHUTDOWN,
        namespaces=namespaces,
    )
    return Manager(config, options, clock=clock)
