"""Scenario harness: envtest + the cluster simulator + fake Ray nodes + the real controllers.

Probe periods are scaled down (``probe_period_scale``) and fake Ray's timings shortened, so a
RayService comes up in a couple of seconds. Traffic loops run on loopback only and are bounded in
both requests and time.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from controllers import constants as c
from controllers.raycluster.reconciler import cache_selectors
from controllers.raycluster.reconciler import setup as setup_raycluster
from controllers.rayservice.kinds import RAYSERVICES
from controllers.rayservice.reconciler import RayServiceOptions
from controllers.rayservice.setup import RayServiceController
from controllers.rayservice.setup import setup as setup_rayservice
from controllers.raysim import RayPodRuntime, Timings
from kuberay_py.client import Client, NotFound
from kuberay_py.client.resources import ENDPOINTSLICES, EVENTS, PODS
from kuberay_py.envtest import Environment
from kuberay_py.manager.manager import Manager
from kuberay_py.manager.options import ManagerOptions

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests" / "scenario" / "samples"
PROBE_SCALE = 0.1
TIMINGS = Timings(build_s=0.3, replica_start_s=0.3, drain_s=3.0, unschedulable_warn_s=30.0)


def sample(name: str) -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load((SAMPLES / name).read_text())
    return copy.deepcopy(obj)


@dataclass
class Scenario:
    env: Environment
    client: Client
    runtime: RayPodRuntime
    manager: Manager
    rayservice: RayServiceController
    namespace: str

    async def get(self, name: str) -> dict[str, Any]:
        obj: dict[str, Any] = await self.client.get(RAYSERVICES, name, self.namespace)
        return obj

    async def ready_endpoints(self, service: str) -> list[tuple[str, int, str]]:
        """(ip, port, pod name) of every ready endpoint in the Service's EndpointSlices."""
        slices = await self.client.list(
            ENDPOINTSLICES, self.namespace, label_selector=f"kubernetes.io/service-name={service}"
        )
        out = []
        for s in slices["items"]:
            ports = [p.get("port") for p in s.get("ports") or [] if p.get("port")]
            for ep in s.get("endpoints") or []:
                if (ep.get("conditions") or {}).get("ready") is True:
                    for ip in ep.get("addresses") or []:
                        for port in ports:
                            out.append((ip, int(port), (ep.get("targetRef") or {}).get("name", "")))
        return out

    async def pods(self, cluster: str, node_type: str | None = None) -> list[dict[str, Any]]:
        selector = f"{c.RAY_CLUSTER_LABEL_KEY}={cluster}"
        if node_type:
            selector += f",{c.RAY_NODE_TYPE_LABEL_KEY}={node_type}"
        return list((await self.client.list(PODS, self.namespace, label_selector=selector))["items"])

    async def events(self, name: str) -> list[dict[str, Any]]:
        items = (await self.client.list(EVENTS, self.namespace))["items"]
        return [e for e in items if (e.get("regarding") or {}).get("name") == name]


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    for item in (obj.get("status") or {}).get("conditions") or []:
        if item["type"] == type_:
            return dict(item)
    return {}


async def eventually(fn: Callable[[], Awaitable[Any]], timeout: float = 30.0, what: str = "condition") -> Any:
    deadline = asyncio.get_running_loop().time() + timeout
    last: Any = None
    while True:
        try:
            last = await fn()
        except NotFound:
            last = None
        if last:
            return last
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}; last value: {last!r}")
        await asyncio.sleep(0.05)


async def wait_ready(
    sc: Scenario, name: str, endpoints: int | None = None, timeout: float = 40.0
) -> dict[str, Any]:
    async def ready() -> dict[str, Any] | None:
        svc = await sc.get(name)
        if condition(svc, "Ready").get("status") != "True":
            return None
        if endpoints is not None and (svc.get("status") or {}).get("numServeEndpoints") != endpoints:
            return None
        return svc

    try:
        return dict(await eventually(ready, timeout, f"{name} Ready with {endpoints} endpoints"))
    except AssertionError as exc:
        svc = await sc.get(name)
        status = svc.get("status") or {}
        for key in ("activeServiceStatus", "pendingServiceStatus"):
            (status.get(key) or {}).pop("rayClusterStatus", None)
        pods = [
            (
                p["metadata"]["name"],
                p["metadata"]["labels"].get("ray.io/serve"),
                (p.get("status") or {}).get("phase"),
            )
            for p in (await sc.client.list(PODS, sc.namespace))["items"]
        ]
        raise AssertionError(f"{exc}\nstatus: {status}\npods: {pods}") from None


@pytest.fixture
async def scenario() -> AsyncIterator[Scenario]:
    runtime = RayPodRuntime(timings=TIMINGS)
    async with Environment(
        [str(ROOT / "config" / "crd" / "bases")],
        simulate=True,
        pod_runtime=runtime,
        probe_period_scale=PROBE_SCALE,
    ) as env:
        client = env.new_client()
        mgr = Manager(
            env.client_config,
            ManagerOptions(
                metrics_bind_address="0",
                health_probe_bind_address="0",
                cache_selectors=cache_selectors(),
                graceful_shutdown_timeout=5.0,
            ),
        )
        setup_raycluster(mgr)
        rs = setup_rayservice(
            mgr, head_check_period=0.3, options=RayServiceOptions(serve_poll_interval=0.2, env={})
        )
        task = asyncio.create_task(mgr.run(install_signal_handlers=False))
        ns = await env.create_namespace()
        try:
            yield Scenario(env, client, runtime, mgr, rs, ns)
        finally:
            mgr.stop()
            try:
                await asyncio.wait_for(task, 15)
            except Exception:
                task.cancel()
            await client.close()
            await runtime.close()


@dataclass
class TrafficReport:
    sent: int = 0
    ok: int = 0
    failures: list[str] = field(default_factory=list)
    min_endpoints: int | None = None


class Traffic:
    """Requests through the serve Service's *current* ready endpoints, like kube-proxy would route.

    Bounded: at most ``max_requests`` and ``max_seconds``. The endpoint list is refreshed from the
    EndpointSlices every ``refresh`` seconds; the smallest list seen is recorded.
    """

    def __init__(
        self,
        sc: Scenario,
        service: str,
        path: str,
        *,
        max_requests: int = 3000,
        max_seconds: float = 30.0,
        refresh: float = 0.05,
    ) -> None:
        self.sc, self.service, self.path = sc, service, path
        self.max_requests, self.max_seconds, self.refresh = max_requests, max_seconds, refresh
        self.report = TrafficReport()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._endpoints: list[tuple[str, int, str]] = []

    async def __aenter__(self) -> Traffic:
        self._endpoints = await self.sc.ready_endpoints(self.service)
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task

    async def _refresh(self) -> None:
        while not self._stop.is_set():
            self._endpoints = await self.sc.ready_endpoints(self.service)
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
                if not endpoints:
                    self.report.sent += 1
                    self.report.failures.append("no ready endpoint")
                    await asyncio.sleep(0.01)
                    continue
                ip, port, pod = endpoints[i % len(endpoints)]
                i += 1
                self.report.sent += 1
                try:
                    async with session.get(f"http://{ip}:{port}{self.path}") as resp:
                        await resp.read()
                        if resp.status == 200:
                            self.report.ok += 1
                        else:
                            self.report.failures.append(f"{pod} {ip}:{port} HTTP {resp.status}")
                except Exception as exc:
                    self.report.failures.append(f"{pod} {ip}:{port} {type(exc).__name__}: {exc}")
                await asyncio.sleep(0.005)
        refresher.cancel()
        await asyncio.gather(refresher, return_exceptions=True)
