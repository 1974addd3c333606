"""Harness for the incremental-upgrade scenarios: envtest with the Gateway API, the simulator's Gateway,
fake Ray, and the operator on a FakeClock that a pump advances (and the test can hold).

Traffic goes to the Gateway's address as a client of the cluster would send it. The monitor reads
both clusters' Serve state through their dashboards, to bound the combined replica count.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import yaml

from controllers.constants import RAYSERVICES
from controllers.raysim import RayPodRuntime, Timings
from kuberay_py.client import Client, NotFound
from kuberay_py.client.resources import GATEWAYCLASSES, GATEWAYS, HTTPROUTES, PODS
from kuberay_py.clock import FakeClock
from kuberay_py.envtest import Environment
from tests.gateway_api import GATEWAY_CRD_DIR, gateway_class
from tests.live import update_live
from tests.polling import condition, eventually
from tests.rayservice_harness import (
    CRD_DIR,
    Operator,
    rayservice,
    serve_config,
    start_operator,
    stop_operator,
)

__all__ = ["GatewayTraffic", "Upgrade", "incremental_service", "open_upgrade", "snapshot"]

PROBE_SCALE = 0.1
TIMINGS = Timings(build_s=0.3, replica_start_s=0.3, drain_s=3.0, unschedulable_warn_s=30.0)
CLASS = "sim"
REPLICAS = 4  # Serve replicas of the one deployment, one per worker


def incremental_service(
    name: str, *, price: int, step: int = 25, interval: int = 10, surge: int = 50
) -> dict[str, Any]:
    svc = rayservice(name, workers=REPLICAS, replicas=REPLICAS, delay=30)  # FakeClock seconds
    svc["spec"]["rayClusterConfig"]["enableInTreeAutoscaling"] = True
    svc["spec"]["upgradeStrategy"] = {
        "type": "NewClusterWithIncrementalUpgrade",
        "clusterUpgradeOptions": {
            "gatewayClassName": CLASS,
            "stepSizePercent": step,
            "intervalSeconds": interval,
            "maxSurgePercent": surge,
        },
    }
    config = serve_config(REPLICAS)
    config["applications"][0]["deployments"][0]["user_config"] = {"price": price}
    svc["spec"]["serveConfigV2"] = yaml.safe_dump(config)
    return svc


def new_version(svc: dict[str, Any], *, price: int, cpu: str) -> dict[str, Any]:
    """A spec that needs a new cluster (worker CPU request) and answers with another price."""
    body = copy.deepcopy(svc)
    worker = body["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    worker.setdefault("resources", {}).setdefault("requests", {})["cpu"] = cpu
    config = yaml.safe_load(body["spec"]["serveConfigV2"])
    config["applications"][0]["deployments"][0]["user_config"] = {"price": price}
    body["spec"]["serveConfigV2"] = yaml.safe_dump(config)
    return body


def snapshot(svc: dict[str, Any]) -> tuple[Any, ...]:
    """(aTC, pTC, aTRP, pTRP) of a RayService (or of its status, given as ``{"status": ...}``)."""
    status = svc.get("status") or {}
    a, p = status.get("activeServiceStatus") or {}, status.get("pendingServiceStatus") or {}
    return (
        a.get("targetCapacity"),
        p.get("targetCapacity"),
        a.get("trafficRoutedPercent"),
        p.get("trafficRoutedPercent"),
    )


class Pump:
    """Advances the operator's FakeClock in small steps while running; ``hold()`` freezes it."""

    def __init__(self, clock: FakeClock, step: float = 0.25, every: float = 0.02) -> None:
        self.clock, self.step, self.every = clock, step, every
        self.running = asyncio.Event()
        self.running.set()
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            await self.running.wait()
            await self.clock.advance(self.step)
            await asyncio.sleep(self.every)

    @contextlib.asynccontextmanager
    async def hold(self) -> AsyncIterator[None]:
        self.running.clear()
        try:
            yield
        finally:
            self.running.set()

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


@dataclass
class GatewayTraffic:
    """Continuous GETs to the Gateway (bounded in count and time); every non-200 is a failure."""

    url: str
    max_requests: int = 20000
    max_seconds: float = 120.0
    sent: int = 0
    answers: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _running: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None

    @contextlib.asynccontextmanager
    async def paused(self) -> AsyncIterator[None]:
        """No request from this loop in between (a measurement batch is the Gateway's only client)."""
        self._running.clear()
        try:
            yield
        finally:
            self._running.set()

    def sent_at_least(self, n: int) -> bool:
        """For ``until``: ``n`` requests went out."""
        return self.sent >= n

    def served(self) -> int:
        """Requests answered 200: a run without failures proves something only if this is not 0."""
        return sum(self.answers.values())

    async def __aenter__(self) -> GatewayTraffic:
        self._running.set()
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as http:
            while not self._stop.is_set() and self.sent < self.max_requests:
                if loop.time() - started > self.max_seconds:
                    self.failures.append("traffic loop reached its time bound")
                    break
                await self._running.wait()
                self.sent += 1
                try:
                    async with http.get(self.url) as resp:
                        text = await resp.text()
                        if resp.status == 200:
                            self.answers[text] += 1
                        else:
                            self.failures.append(f"HTTP {resp.status}: {text[:200]}")
                except Exception as exc:
                    self.failures.append(f"{type(exc).__name__}: {exc}")
                await asyncio.sleep(0.005)


@dataclass
class Upgrade:
    env: Environment
    client: Client
    namespace: str
    runtime: RayPodRuntime
    operator: Operator
    clock: FakeClock
    pump: Pump
    max_replicas: int = 0

    async def get(self, name: str) -> dict[str, Any]:
        obj: dict[str, Any] = await self.client.get(RAYSERVICES, name, self.namespace)
        return obj

    async def update_spec(self, name: str, edit: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        """Apply ``edit`` to the current RayService, again on a 409 (the operator writes its status)."""
        await update_live(self.client, RAYSERVICES, name, self.namespace, edit)

    async def route(self, name: str) -> dict[str, Any] | None:
        try:
            obj: dict[str, Any] = await self.client.get(HTTPROUTES, f"{name}-httproute", self.namespace)
        except NotFound:
            return None
        return obj

    async def serving(self, name: str) -> dict[str, Any]:
        """The RayService once Ready and serving all its traffic from one cluster through its
        HTTPRoute (one backend): the state an upgrade starts from."""

        async def ready() -> dict[str, Any] | None:
            svc = await self.get(name)
            route = await self.route(name)
            if condition(svc, "Ready").get("status") != "True" or route is None:
                return None
            backends = route["spec"]["rules"][0]["backendRefs"]
            active = (svc.get("status") or {}).get("activeServiceStatus") or {}
            return svc if len(backends) == 1 and active.get("trafficRoutedPercent") == 100 else None

        return dict(await until(f"RayService {name} serving through its HTTPRoute", ready))

    async def gateway_url(self, name: str) -> str:
        async def programmed() -> str | None:
            try:
                gw = await self.client.get(GATEWAYS, f"{name}-gateway", self.namespace)
            except NotFound:
                return None
            status = gw.get("status") or {}
            if condition(gw, "Programmed").get("status") != "True" or not status.get("addresses"):
                return None
            return f"http://{status['addresses'][0]['value']}:80/fruit"

        return str(await eventually(programmed, "Gateway programmed", 30))

    async def serve_doc(self, cluster: str) -> dict[str, Any]:
        """``GET /api/serve/applications/`` of ``cluster``'s head ({} when unreachable)."""
        pods = (
            await self.client.list(
                PODS, self.namespace, label_selector=f"ray.io/cluster={cluster},ray.io/node-type=head"
            )
        )["items"]
        if not pods or not (pods[0].get("status") or {}).get("podIP"):
            return {}
        url = f"http://{pods[0]['status']['podIP']}:8265/api/serve/applications/"
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2)) as http,
                http.get(url) as r,
            ):
                doc: dict[str, Any] = await r.json()
        except Exception:
            return {}
        return doc

    async def replicas(self, cluster: str) -> int:
        """Serve replicas on ``cluster`` (any state), read from its dashboard (0 when unreachable)."""
        doc = await self.serve_doc(cluster)
        return sum(
            len(d.get("replicas") or [])
            for a in (doc.get("applications") or {}).values()
            for d in (a.get("deployments") or {}).values()
        )

    async def watch_replicas(self, name: str, stop: asyncio.Event) -> None:
        """Record the largest combined replica count of the active and pending clusters.

        The two dashboards cannot be read at one instant, and the operator may take a capacity
        step between the two reads. During an upgrade the pending cluster only grows and the
        active one only shrinks, so reading the pending cluster first gives a sum no larger than
        the true total at the second read: a recorded overshoot is a real one. (Read the other
        way round, A's count from before a step down plus B's from after the step up that
        follows it added up to 200 % on a loaded machine.)
        """
        while not stop.is_set():
            status = (await self.get(name)).get("status") or {}
            names = [
                (status.get(k) or {}).get("rayClusterName")
                for k in ("pendingServiceStatus", "activeServiceStatus")
            ]
            total = 0
            for cluster in names:
                if cluster:
                    total += await self.replicas(cluster)
            self.max_replicas = max(self.max_replicas, total)
            await asyncio.sleep(0.01)

    async def record(self, name: str, into: list[dict[str, Any]]) -> None:
        """Every status the operator writes, in order (a watch sees each write); runs until cancelled."""
        listing = await self.client.list(RAYSERVICES, self.namespace, field_selector=f"metadata.name={name}")
        version = listing["metadata"]["resourceVersion"]
        into.extend(copy.deepcopy(item.get("status") or {}) for item in listing["items"])
        while True:
            watch = self.client.watch(
                RAYSERVICES, self.namespace, resource_version=version, field_selector=f"metadata.name={name}"
            )
            async for event in watch:
                if event["type"] in ("ADDED", "MODIFIED"):
                    version = event["object"]["metadata"]["resourceVersion"]
                    status = event["object"].get("status") or {}
                    if not into or into[-1] != status:
                        into.append(copy.deepcopy(status))

    async def share(self, url: str, n: int, marker: str) -> float:
        """Fraction of ``n`` requests answered by the version whose body contains ``marker``."""
        hits = 0
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as http:
            for _ in range(n):
                async with http.get(url) as r:
                    assert r.status == 200, await r.text()
                    hits += marker in await r.text()
        return hits / n


@contextlib.asynccontextmanager
async def open_upgrade(*, gateway_api: bool = True) -> AsyncIterator[Upgrade]:
    """``gateway_api=False``: a cluster without the Gateway API CRDs."""
    runtime = RayPodRuntime(timings=TIMINGS)
    crds = [str(CRD_DIR), str(GATEWAY_CRD_DIR)] if gateway_api else [str(CRD_DIR)]
    async with Environment(crds, simulate=True, pod_runtime=runtime, probe_period_scale=PROBE_SCALE) as env:
        client = env.new_client()
        if gateway_api:
            await client.create(GATEWAYCLASSES, gateway_class(CLASS))
        clock = FakeClock()
        pump = Pump(clock)
        op = start_operator(env.client_config, clock=clock, serve_poll_interval=0.5)
        ns = await env.create_namespace()
        upgrade = Upgrade(env, client, ns, runtime, op, clock, pump)
        try:
            yield upgrade
        finally:
            await stop_operator(upgrade.operator)  # a test may have replaced it (restart)
            await pump.close()
            await client.close()
            await runtime.close()


async def until(what: str, probe: Callable[[], Any], timeout: float = 60.0) -> Any:
    return await eventually(probe, what, timeout)
