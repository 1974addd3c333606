"""Scenario harness: envtest + the cluster simulator + fake Ray nodes + the real controllers.

Probe periods are scaled down (``probe_period_scale``) and fake Ray's timings shortened, so a
RayService comes up in a couple of seconds. Traffic loops run on loopback only and are bounded in
both requests and time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from controllers.constants import RAYSERVICES
from controllers.raysim import RayPodRuntime, Timings
from kuberay_py.envtest import Environment
from tests.polling import condition, eventually
from tests.rayservice_harness import (
    CRD_DIR,
    Operator,
    ServingNamespace,
    Traffic,
    sample,
    start_operator,
    stop_operator,
)

__all__ = ["Scenario", "Traffic", "condition", "eventually", "sample", "wait_ready"]

PROBE_SCALE = 0.1
TIMINGS = Timings(build_s=0.3, replica_start_s=0.3, drain_s=3.0, unschedulable_warn_s=30.0)


@dataclass
class Scenario(ServingNamespace):
    env: Environment
    runtime: RayPodRuntime
    operator: Operator

    async def get(self, name: str) -> dict[str, Any]:
        obj: dict[str, Any] = await self.client.get(RAYSERVICES, name, self.namespace)
        return obj


async def wait_ready(
    sc: Scenario, name: str, endpoints: int | None = None, timeout: float = 40.0
) -> dict[str, Any]:
    return await sc.rayservice_ready(name, endpoints, timeout=timeout)


@pytest.fixture
async def scenario() -> AsyncIterator[Scenario]:
    runtime = RayPodRuntime(timings=TIMINGS)
    async with Environment(
        [str(CRD_DIR)],
        simulate=True,
        pod_runtime=runtime,
        probe_period_scale=PROBE_SCALE,
    ) as env:
        client = env.new_client()
        op = start_operator(env.client_config)
        ns = await env.create_namespace()
        try:
            yield Scenario(client=client, namespace=ns, env=env, runtime=runtime, operator=op)
        finally:
            await stop_operator(op)
            await client.close()
            await runtime.close()
