"""The Manager of every operator a test runs on its own event loop.

No listening ports (a test process may run several operators), the RayCluster controller's cache
selectors and transforms (what the real operator's cache holds), and a short graceful shutdown so
a test's teardown stays bounded.
"""

from __future__ import annotations

import asyncio

from controllers.raycluster.setup import cache_selectors, cache_transforms
from kuberay_py.client import ClientConfig
from kuberay_py.clock import Clock
from kuberay_py.manager import Manager, ManagerOptions

__all__ = ["in_loop_manager", "stop_in_loop"]

GRACEFUL_SHUTDOWN = 5.0
STOP_BOUND = 15.0  # past the graceful shutdown: a stop that hangs is cancelled, not waited on


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


async def stop_in_loop(manager: Manager, run: asyncio.Task[None]) -> None:
    """Stop ``manager`` (whose ``run()`` is the task ``run``) gracefully; cancel it if it does not
    finish within its grace period."""
    if run.done():
        return
    manager.stop()
    try:
        await asyncio.wait_for(run, STOP_BOUND)
    except Exception:
        run.cancel()
