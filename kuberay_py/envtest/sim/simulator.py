"""The cluster simulator: the parts of a cluster that envtest leaves out, driven only through the API.

envtest (like controller-runtime's) runs an API server and nothing else, so Pods never run,
Services never get endpoints and owned objects are never collected. :class:`Simulator` adds a
kubelet with a one-node scheduler, the EndpointSlice and Endpoints controllers (kube-apiserver's
``services/proxy`` reads the latter), the garbage collector, the batch/v1 Job controller and the
clusterrole-aggregation controller (kube-controller-manager's, not the API server's, fills in an
aggregated ClusterRole's rules). It is
an ordinary API client (a :class:`~kuberay_py.client.Client` plus informers), so it works the
same against the built-in API server and a real kube-apiserver.

Pods get addresses from a pod network block (:mod:`kuberay_py.envtest.sim.podnetwork`): pass one
(``network=``, as :class:`~kuberay_py.envtest.Environment` does, which also decides about the
loopback fallback), or the simulator claims one when it starts and releases it when it stops.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio

from kuberay_py.cache import Cache
from kuberay_py.client import AlreadyExists, ApiError, Client, resources
from kuberay_py.clock import Clock, RealClock, format_rfc3339
from kuberay_py.envtest.sim.clusterroles import ClusterRoleAggregationController
from kuberay_py.envtest.sim.endpoints import EndpointsController
from kuberay_py.envtest.sim.endpointslices import EndpointSliceController
from kuberay_py.envtest.sim.gateway import GatewayController
from kuberay_py.envtest.sim.gc import GarbageCollector
from kuberay_py.envtest.sim.jobs import JobController
from kuberay_py.envtest.sim.kubelet import Kubelet
from kuberay_py.envtest.sim.podnetwork import PodNetwork, claim_pod_network
from kuberay_py.envtest.sim.runtime import PodRuntime
from kuberay_py.log import get_logger

__all__ = ["Simulator"]

log = get_logger("kuberay_py.envtest.sim")


class Simulator:
    """Run with ``await sim.run()`` (until cancelled); ``await sim.wait_ready()`` once its caches synced."""

    def __init__(
        self,
        client: Client,
        *,
        pod_runtime: PodRuntime | None = None,
        probe_period_scale: float = 1.0,
        clock: Clock | None = None,
        node_name: str = "sim-node",
        garbage_collection: bool = True,
        endpoint_controllers: bool = True,
        job_backoff_scale: float = 1.0,
        network: PodNetwork | None = None,
    ) -> None:
        self.client = client
        self.clock = clock or RealClock()
        self.cache = Cache(client, clock=self.clock)
        self._owns_network = network is None
        self.network = network if network is not None else claim_pod_network()
        self.addresses = self.network.allocator()
        self.node_name = node_name
        self.kubelet = Kubelet(
            client,
            clock=self.clock,
            pod_runtime=pod_runtime,
            probe_period_scale=probe_period_scale,
            node_name=node_name,
            addresses=self.addresses,
        )
        self.endpoint_slices = EndpointSliceController(client, self.cache) if endpoint_controllers else None
        self.endpoints = EndpointsController(client, self.cache) if endpoint_controllers else None
        self.gc = GarbageCollector(client, self.cache) if garbage_collection else None
        self.jobs = JobController(client, self.cache, clock=self.clock, backoff_scale=job_backoff_scale)
        self.gateway = GatewayController(client, self.cache, self.addresses, clock=self.clock)
        self.cluster_roles = ClusterRoleAggregationController(client, self.cache)
        self._ready = asyncio.Event()

    async def wait_ready(self) -> None:
        await self._ready.wait()

    async def run(self) -> None:
        try:
            await self._run()
        finally:
            if self._owns_network:
                self.network.release()  # after every Pod stopped: nothing is bound to it any more

    async def _run(self) -> None:
        self.cache.informer_for(resources.PODS).add_event_handler(self.kubelet)
        if self.endpoint_slices is not None:
            self.endpoint_slices.register()
        if self.endpoints is not None:
            self.endpoints.register()
        if self.gc is not None:
            await self.gc.register()
        self.jobs.register()
        self.cluster_roles.register()
        await self.gateway.register()
        await self._ensure_node()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.kubelet.run)
            tg.start_soon(self.jobs.run)
            tg.start_soon(self.cluster_roles.run)
            if self.endpoint_slices is not None:
                tg.start_soon(self.endpoint_slices.run)
            if self.endpoints is not None:
                tg.start_soon(self.endpoints.run)
            if self.gc is not None:
                tg.start_soon(self.gc.run)
            tg.start_soon(self.gateway.run)
            tg.start_soon(self.cache.run)
            await self.cache.wait_for_cache_sync()
            self._ready.set()
            log.info("cluster simulator running", node=self.node_name)

    async def _ensure_node(self) -> None:
        """Register the Node the Pods are bound to, so ``kubectl get nodes`` shows where they run."""
        node: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.node_name,
                "labels": {"kubernetes.io/hostname": self.node_name, "kubernetes.io/os": "linux"},
            },
        }
        try:
            created = await self.client.create(resources.NODES, node)
        except AlreadyExists:
            return
        except ApiError as exc:
            log.info("could not register the simulator's Node", error=str(exc))
            return
        now = format_rfc3339(self.clock.utcnow())
        created["status"] = {
            "addresses": [
                {"type": "InternalIP", "address": self.kubelet.host_ip},
                {"type": "Hostname", "address": self.node_name},
            ],
            "capacity": {"cpu": "64", "memory": "256Gi", "pods": "1000"},
            "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "1000"},
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "simulated kubelet is posting ready status",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
        }
        try:
            await self.client.update_status(resources.NODES, created)
        except ApiError as exc:
            log.info("could not set the simulator Node's status", error=str(exc))
