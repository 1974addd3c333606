"""The pieces every RayService end-to-end suite needs: KubeRay's samples, the operator in-process,
the namespace's serving view, and a traffic loop routed the way kube-proxy would route it.

Shared by ``tests/scenario`` (simulated kubelet and fake Ray nodes) and
``tests/integration/rayservice`` (no kubelet, one fake Ray), so both drive the same operator
wiring and read endpoints the same way.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import aiohttp
import yaml

from controllers import constants as c
from controllers.ray.dashboard import DashboardClientFactory
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.setup import setup as setup_raycluster
from controllers.rayservice.reconciler import RayServiceOptions
from controllers.rayservice.setup import RayServiceController
from controllers.rayservice.setup import setup as setup_rayservice
from kuberay_py.client import Client
from kuberay_py.client.config import ClientConfig
from kuberay_py.client.resources import ENDPOINTSLICES, EVENTS, PODS
from kuberay_py.clock import Clock
from kuberay_py.manager.manager import Manager
from tests.in_loop_manager import in_loop_manager, start_in_loop, stop_in_loop
from tests.live import Edit, update_live
from tests.polling import condition, eventually

ROOT = Path(__file__).resolve().parents[1]
CRD_DIR = ROOT / "config" / "crd" / "bases"
SAMPLES = ROOT / "tests" / "fixtures" / "kuberay" / "samples"

Endpoint = tuple[str, int, str]  # (ip, port, Pod name)


def sample(name: str) -> dict[str, Any]:
    """A fresh copy of one of KubeRay's vendored sample manifests."""
    obj: dict[str, Any] = yaml.safe_load((SAMPLES / name).read_text())
    return copy.deepcopy(obj)


def serve_config(replicas: int, *, request_timeout_s: float = 5) -> dict[str, Any]:
    """One app whose replicas each need a worker of their own (max_replicas_per_node 1)."""
    return {
        "http_options": {"request_timeout_s": request_timeout_s},
        "applications": [
            {
                "name": "fruit_app",
                "import_path": "fruit:app",
                "route_prefix": "/fruit",
                "deployments": [
                    {
                        "name": "Fruit",
                        "num_replicas": replicas,
                        "max_replicas_per_node": 1,
                        "ray_actor_options": {"num_cpus": 0.1},
                    }
                ],
            }
        ],
    }


def rayservice(
    name: str = "rs", *, workers: int = 3, replicas: int = 3, delay: int | None = None
) -> dict[str, Any]:
    """KubeRay's sample RayService, its head kept free of replicas (num-cpus 0), ``workers`` workers."""
    svc = sample("ray-service.sample.yaml")
    svc["metadata"] = {"name": name}
    spec = svc["spec"]["rayClusterConfig"]
    spec["headGroupSpec"]["rayStartParams"] = {"num-cpus": "0"}
    spec["workerGroupSpecs"][0].update(replicas=workers, minReplicas=workers, maxReplicas=workers + 2)
    svc["spec"]["serveConfigV2"] = yaml.safe_dump(serve_config(replicas))
    if delay is not None:
        svc["spec"]["rayClusterDeletionDelaySeconds"] = delay
    return svc


# -- the operator -----------------------------------------------------------------------------------


@dataclass
class Operator:
    manager: Manager
    rayservice: RayServiceController
    task: asyncio.Task[None]


def start_operator(
    config: ClientConfig,
    *,
    raycluster: bool = True,
    head_check_period: float = 0.3,
    serve_poll_interval: float = 0.2,
    env: dict[str, str] | None = None,
    clock: Clock | None = None,
    namespaces: list[str] | None = None,
    raycluster_options: RayClusterOptions | None = None,
    dashboard_factory: DashboardClientFactory | None = None,
) -> Operator:
    """The manager with the RayService (and by default RayCluster) controller, running on this loop.

    ``namespaces`` limits what it watches (see ``in_loop_manager``)."""
    mgr = in_loop_manager(config, clock=clock, namespaces=namespaces)
    if raycluster:
        setup_raycluster(mgr, options=raycluster_options)
    rs = setup_rayservice(
        mgr,
        dashboard_factory=dashboard_factory,
        head_check_period=head_check_period,
        options=RayServiceOptions(serve_poll_interval=serve_poll_interval, env=env or {}),
    )
    return Operator(mgr, rs, start_in_loop(mgr))


async def stop_operator(op: Operator) -> None:
    """Graceful stop; cancelled if it does not finish within its grace period."""
    await stop_in_loop(op.manager, op.task)


# -- what a namespace serves ------------------------------------------------------------------------


async def ready_endpoints(client: Client, namespace: str, service: str) -> list[Endpoint]:
    """Every ready endpoint of the Service's EndpointSlices, as kube-proxy would route to them."""
    slices = await client.list(ENDPOINTSLICES, namespace, label_selector=service_slices(service))
    return ready_in(slices["items"])


def service_slices(service: str) -> str:
    """The label selector of a Service's EndpointSlices."""
    return f"kubernetes.io/service-name={service}"


def ready_in(slices: Iterable[dict[str, Any]]) -> list[Endpoint]:
    """The ready endpoints these EndpointSlices hold."""
    out: list[Endpoint] = []
    for s in slices:
        ports = [int(p["port"]) for p in s.get("ports") or [] if p.get("port")]
        for ep in s.get("endpoints") or []:
            if (ep.get("conditions") or {}).get("ready") is True:
                pod = (ep.get("targetRef") or {}).get("name", "")
                out += [(ip, port, pod) for ip in ep.get("addresses") or [] for port in ports]
    return out


@dataclass
class ServingNamespace:
    """Reads of one test namespace: the serve endpoints, a cluster's Pods, an object's Events."""

    client: Client
    namespace: str

    async def ready_endpoints(self, service: str) -> list[Endpoint]:
        return await ready_endpoints(self.client, self.namespace, service)

    async def pods(self, cluster: str, node_type: str | None = None) -> list[dict[str, Any]]:
        selector = f"{c.RAY_CLUSTER_LABEL_KEY}={cluster}"
        if node_type:
            selector += f",{c.RAY_NODE_TYPE_LABEL_KEY}={node_type}"
        return list((await self.client.list(PODS, self.namespace, label_selector=selector))["items"])

    async def events(self, name: str) -> list[dict[str, Any]]:
        items = (await self.client.list(EVENTS, self.namespace))["items"]
        return [e for e in items if (e.get("regarding") or {}).get("name") == name]

    async def rayservice_ready(
        self, name: str, endpoints: int | None = None, *, settled: bool = False, timeout: float = 40.0
    ) -> dict[str, Any]:
        """RayService ``name`` once Ready (with ``endpoints`` serve endpoints, if given; with no
        pending cluster left if ``settled``). On a timeout the error shows its status (without
        the nested cluster statuses) and every Pod's serve label and phase."""

        async def ready() -> dict[str, Any] | None:
            svc: dict[str, Any] = await self.client.get(c.RAYSERVICES, name, self.namespace)
            status = svc.get("status") or {}
            if condition(svc, "Ready").get("status") != "True":
                return None
            if endpoints is not None and status.get("numServeEndpoints") != endpoints:
                return None
            if settled and (status.get("pendingServiceStatus") or {}).get("rayClusterName"):
                return None
            return svc

        try:
            return dict(await eventually(ready, f"{name} Ready with {endpoints} endpoints", timeout))
        except AssertionError as exc:
            svc = await self.client.get(c.RAYSERVICES, name, self.namespace)
            status = svc.get("status") or {}
            for key in ("activeServiceStatus", "pendingServiceStatus"):
                (status.get(key) or {}).pop("rayClusterStatus", None)
            pods = [
                (
                    p["metadata"]["name"],
                    p["metadata"]["labels"].get("ray.io/serve"),
                    (p.get("status") or {}).get("phase"),
                )
                for p in (await self.client.list(PODS, self.namespace))["items"]
            ]
            raise AssertionError(f"{exc}\nstatus: {status}\npods: {pods}") from None

    async def edit_rayservice(self, name: str, edit: Edit) -> dict[str, Any]:
        """Change RayService ``name`` as a user would while the operator writes its status
        (re-read and written again on 409, see tests/live.py)."""
        return await update_live(self.client, c.RAYSERVICES, name, self.namespace, edit)


def new_ray_version(svc: dict[str, Any]) -> None:
    """An edit of ``rayClusterConfig``, so the RayService needs a new cluster (an upgrade)."""
    svc["spec"]["rayClusterConfig"]["rayVersion"] = "2.60.0"


def with_serve_config(config: dict[str, Any]) -> Edit:
    """An edit that gives the RayService ``config`` as its serveConfigV2 (the same cluster)."""
    return lambda svc: svc["spec"].update(serveConfigV2=yaml.safe_dump(config))


# -- traffic ----------------------------------------------------------------------------------------


class EndpointSource(Protocol):
    async def ready_endpoints(self, service: str) -> list[Endpoint]: ...


@dataclass
class TrafficReport:
    sent: int = 0
    ok: int = 0
    failures: list[str] = field(default_factory=list)
    pods_hit: set[str] = field(default_factory=set)
    min_endpoints: int | None = None

    def assert_all_served(self, more_than: int) -> None:
        """Every request answered 200, and more than ``more_than`` went out (a clean run of a
        few requests proves nothing)."""
        assert self.failures == [], self.failures[:10]
        assert self.ok == self.sent > more_than, (self.ok, self.sent)


class Traffic:
    """GETs through the serve Service's *currently ready* endpoints, as kube-proxy would route them.

    The endpoint list is refreshed from the EndpointSlices every ``refresh`` seconds and the
    smallest list seen is recorded. Bounded by ``max_requests`` and ``max_seconds`` (the loop
    ends early when either is reached; the caller asserts on counts, not on time).
    """

    def __init__(
        self,
        source: EndpointSource,
        service: str,
        path: str = "/fruit",
        *,
        max_requests: int = 4000,
        max_seconds: float = 30.0,
        refresh: float = 0.05,
    ) -> None:
        self.source, self.service, self.path = source, service, path
        self.max_requests, self.max_seconds, self.refresh = max_requests, max_seconds, refresh
        self.report = TrafficReport()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._endpoints: list[Endpoint] = []

    async def __aenter__(self) -> Traffic:
        self._endpoints = await self.source.ready_endpoints(self.service)
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task

    async def sent_at_least(self, n: int) -> bool:
        """For ``eventually``: ``n`` requests went out (an error if the loop already gave up)."""
        if self.report.sent >= n:
            return True
        if self._task is not None and self._task.done():
            raise AssertionError(f"traffic loop ended early: {self.report}")
        return False

    async def flows(self, n: int, what: str) -> None:
        """Wait until ``n`` more requests went out from now (e.g. across a step just taken)."""
        mark = self.report.sent
        await eventually(lambda: self.sent_at_least(mark + n), what)

    async def _refresh(self) -> None:
        while not self._stop.is_set():
            self._endpoints = await self.source.ready_endpoints(self.service)
            n = len(self._endpoints)
            r = self.report
            r.min_endpoints = n if r.min_endpoints is None else min(r.min_endpoints, n)
            await asyncio.sleep(self.refresh)

    async def _run(self) -> None:
        refresher = asyncio.create_task(self._refresh())
        started = time.monotonic()
        i = 0
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=3)) as session:
            while not self._stop.is_set() and self.report.sent < self.max_requests:
                if time.monotonic() - started > self.max_seconds:
                    break
                endpoints = self._endpoints
                self.report.sent += 1
                if not endpoints:
                    self.report.failures.append("no ready endpoint")
                    await asyncio.sleep(0.01)
                    continue
                ip, port, pod = endpoints[i % len(endpoints)]
                i += 1
                try:
                    async with session.get(f"http://{ip}:{port}{self.path}") as resp:
                        await resp.read()
                        if resp.status == 200:
                            self.report.ok += 1
                            self.report.pods_hit.add(pod)
                        else:
                            self.report.failures.append(f"{pod} {ip}:{port} HTTP {resp.status}")
                except Exception as exc:
                    self.report.failures.append(f"{pod} {ip}:{port} {type(exc).__name__}: {exc}")
                await asyncio.sleep(0.005)
        refresher.cancel()
        await asyncio.gather(refresher, return_exceptions=True)
