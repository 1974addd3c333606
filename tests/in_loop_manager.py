"""The Manager of every operator a test runs on its own event loop.

No listening ports (a test process may run several operators), the RayCluster controller's cache
selectors and transforms (what the real operator's cache holds), and a short graceful shutdown so
a test's teardown stays bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from controllers.raycluster.setup import cache_selectors, cache_transforms
from kuberay_py.client import ClientConfig
from kuberay_py.clock import Clock
from kuberay_py.manager import Manager, ManagerOptions

__all__ = ["in_loop_manager", "running_in_loop", "start_in_loop", "stop_in_loop"]

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


def start_in_loop(manager: Manager) -> asyncio.Task[None]:
    """``manager.run()`` as a task of this loop, without signal handlers (the test process's own)."""
    return asyncio.create_task(manager.run(install_signal_handlers=False))


async def stop_in_loop(manager: Manager, run: asyncio.Task[None], *, check: bool = False) -> None:
    """Stop ``manager`` (whose ``run()`` is the task ``run``) gracefully; cancel it if it does not
    finish within its grace period. ``check``: raise the error the manager failed with (or the
    hung stop), for tests that assert how an operator fails; else a teardown only cleans up."""
    if run.done():
        if check:
            run.result()
        return
    manager.stop()
    try:
        await asyncio.wait_for(run, STOP_BOUND)
    except Exception:
        run.cancel()
        if check:
            raise


@contextlib.asynccontextmanager
async def running_in_loop(manager: Manager, *, check: bool = True) -> AsyncIterator[asyncio.Task[None]]:
    """``manager`` running for the block (the task of its ``run()``); stopped after it, raising
    the error it failed with unless ``check`` is off (see :func:`stop_in_loop`)."""
    run = start_in_loop(manager)
    try:
        yield run
    finally:
        await stop_in_loop(manager, run, check=check)
