"""Running the cluster simulator inside a test, and Pods that answer HTTP, for the simulator's
own integration tests.

``running_simulator`` owns what every such test set up and tore down by hand: the simulator's
client, its task, the wait until its informers synced, and the cancel after. ``PodServers`` is
the part of a test PodRuntime that serves one aiohttp app per Pod on the Pod's IP.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from kuberay_py.envtest import Environment
from kuberay_py.envtest.sim import Simulator

__all__ = ["POD_PORT", "PodServers", "running_simulator"]

READY_BOUND = 20.0  # the simulator's informers syncing on a loaded machine, not a performance figure
POD_PORT = 8080


@contextlib.asynccontextmanager
async def running_simulator(env: Environment, **options: Any) -> AsyncIterator[Simulator]:
    """A :class:`Simulator` of ``env`` (built with ``options``) running and synced for the block.

    Without a ``network`` option the block is claimed through ``env``, which insists on a routed
    pod network when ``env`` is a real kube-apiserver: a Simulator left to claim its own would fall
    back to loopback addresses there, which kube-apiserver refuses in every EndpointSlice, so no
    endpoint would ever be published.
    """
    client = env.new_client()
    claimed = env.claim_pod_network() if "network" not in options else None
    if claimed is not None:
        options["network"] = claimed
    simulator = Simulator(client, **options)
    task = asyncio.create_task(simulator.run())
    try:
        await asyncio.wait_for(simulator.wait_ready(), READY_BOUND)
        if task.done():
            task.result()  # it failed while starting: that error, not a later symptom
        yield simulator
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await client.close()
        if claimed is not None:
            claimed.release()  # after the simulator stopped: nothing is bound to it any more


class PodServers:
    """One aiohttp app per running Pod on ``<pod IP>:8080``, keyed by the Pod's uid."""

    def __init__(self) -> None:
        self._runners: dict[str, web.AppRunner] = {}

    async def serve(self, pod: dict[str, Any], ip: str, app: web.Application) -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, ip, POD_PORT).start()
        self._runners[pod["metadata"]["uid"]] = runner

    def serves(self, pod: dict[str, Any]) -> bool:
        return pod["metadata"]["uid"] in self._runners

    async def stop(self, pod: dict[str, Any]) -> None:
        runner = self._runners.pop(pod["metadata"]["uid"], None)
        if runner is not None:
            await runner.cleanup()
