"""The RayCronJob controller alone on a FakeClock, for the envtest and the KubeRay e2e suites.

Schedules are stepped by advancing the clock (the manager's, so the controller's requeues and
the wall time it reads for ticks move together); a test gets a client and its own namespace.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from controllers.raycronjob.options import RayCronJobOptions
from controllers.raycronjob.setup import setup as setup_raycronjob
from kuberay_py.client import Client
from kuberay_py.clock import FakeClock
from kuberay_py.envtest import Environment
from tests.in_loop_manager import in_loop_manager, running_in_loop

__all__ = ["cron_operator"]


@contextlib.asynccontextmanager
async def cron_operator(
    env: Environment, clock: FakeClock, options: RayCronJobOptions | None = None
) -> AsyncIterator[tuple[Client, str]]:
    """The controller running on ``clock`` for the block; a client and a fresh namespace (deleted
    after). Its stop is not checked: a schedule test asserts on the API, not on the teardown."""
    manager = in_loop_manager(env.client_config, clock=clock)
    setup_raycronjob(manager, options=options)
    client = env.new_client()
    async with running_in_loop(manager, check=False):
        ns = await env.create_namespace()
        try:
            yield client, ns
        finally:
            await env.delete_namespace(ns)
            await client.close()
