"""Whether the Gateway API is installed, discovered once, and the watches it brings.

The operator touches Gateways and HTTPRoutes only for a RayService that asks for
``NewClusterWithIncrementalUpgrade``. The first such reconcile asks discovery whether
``gateway.networking.k8s.io/v1`` is served. If it is, Gateways and HTTPRoutes join the cache and
their events (status included: ``Programmed``, ``ResolvedRefs``) wake the owning RayService; if
not, the answer is remembered and the RayService gets a condition saying so, while every other
RayService and RayCluster goes on as before (KubeRay instead fails every reconcile). Installing
the CRDs later takes an operator restart, as KubeRay's scheme registration does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from kuberay_py.client import Client
from kuberay_py.client.resources import GATEWAYS, HTTPROUTES
from kuberay_py.log import get_logger

__all__ = ["GATEWAY_API_GROUP_VERSION", "GatewayAPI"]

GATEWAY_API_GROUP_VERSION = "gateway.networking.k8s.io/v1"
SYNC_TIMEOUT = 30.0

log = get_logger(__name__)


class GatewayAPI:
    """``await available()``: discovery once; on success ``start_watches()`` (which may wait for sync)."""

    def __init__(self, client: Client, start_watches: Callable[[], asyncio.Future[None] | None]) -> None:
        self._client = client
        self._start_watches = start_watches
        self._available: bool | None = None
        self._lock = asyncio.Lock()

    @property
    def known(self) -> bool | None:
        return self._available

    async def available(self) -> bool:
        if self._available is not None:
            return self._available
        async with self._lock:
            if self._available is None:
                if not all([await self._client.served(GATEWAYS), await self._client.served(HTTPROUTES)]):
                    log.warning("Gateway API not installed; incremental upgrades cannot run")
                    self._available = False
                    return False
                synced = self._start_watches()
                if synced is not None:
                    await asyncio.wait_for(synced, SYNC_TIMEOUT)
                log.info("Gateway API found; watching Gateways and HTTPRoutes")
                self._available = True
        return self._available
