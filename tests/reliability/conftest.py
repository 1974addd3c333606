"""Reliability rig: envtest + the cluster simulator + fake Ray nodes, with an operator we can kill.

The serving path (kubelet probes -> EndpointSlices -> traffic to Pod addresses) lives in the
simulator, in this process; the operator is the thing under stress. It runs either in-process
(``InProcessOperator``: ``build_manager``, the exact wiring ``kuberay-operator run`` uses) or as a
real ``kuberay-operator run`` child process (``OperatorProcess``) so it can be SIGKILLed mid-reconcile.

Nothing here sleeps to synchronise: every wait polls API state until a predicate holds, bounded by
a generous overall timeout that only trips when something is stuck. Traffic is loopback only and
bounded in both requests and time.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from controllers import constants as c
from controllers.cli.flags import OperatorFlags
from controllers.cli.operator import build_manager
from controllers.raysim import RayPodRuntime, Timings
from kuberay_py.client import Client, NotFound
from kuberay_py.client.resources import ENDPOINTSLICES, EVENTS, PODS
from kuberay_py.envtest import Environment
from kuberay_py.envtest.apiserver.server import BuiltinAPIServer
from kuberay_py.manager import Manager
from kuberay_py.metrics import registry

ROOT = Path(__file__).resolve().parents[2]
CRDS = str(ROOT / "config" / "crd" / "bases")
SAMPLE = ROOT / "tests" / "fixtures" / "kuberay" / "samples" / "ray-service.sample.yaml"
OPERATOR = Path(sys.executable).with_name("kuberay-operator")
PROBE_SCALE = 0.1  # the injected worker readiness probe (period 5 s) runs every 0.5 s
TIMINGS = Timings(build_s=0.3, replica_start_s=0.3, drain_s=3.0, unschedulable_warn_s=30.0)
HEAD_CHECK_PERIOD = 0.3
WAIT = 40.0  # generous bound for "something is stuck"; never an assertion on elapsed time


# -- objects --------------------------------------------------------------------------------------


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
    svc: dict[str, Any] = copy.deepcopy(yaml.safe_load(SAMPLE.read_text()))
    svc["metadata"] = {"name": name}
    spec = svc["spec"]["rayClusterConfig"]
    spec["headGroupSpec"]["rayStartParams"] = {"num-cpus": "0"}
    spec["workerGroupSpecs"][0].update(replicas=workers, minReplicas=workers, maxReplicas=workers + 2)
    svc["spec"]["serveConfigV2"] = yaml.safe_dump(serve_config(replicas))
    if delay is not None:
        svc["spec"]["rayClusterDeletionDelaySeconds"] = delay
    return svc


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    for item in (obj.get("status") or {}).get("conditions") or []:
        if item["type"] == type_:
            return dict(item)
    return {}


# -- waiting --------------------------------------------------------------------------------------


async def eventually(fn: Callable[[], Awaitable[Any]], what: str, timeout: float = WAIT) -> Any:
    """Poll ``fn`` until it returns something truthy; fail (with the last value) at the bound."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: Any = None
    while True:
        try:
            last = await fn()
        except NotFound:
            last = None
        if last:
            return last
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}; last value: {last!r}")
        await asyncio.sleep(0.05)


# -- in-process operator metrics ------------------------------------------------------------------


def _sample(name: str, labels: dict[str, str]) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def reconciles(controller: str) -> float:
    """Finished reconciles of a controller in this process (the in-process operator's metrics)."""
    return _sample(
        "controller_runtime_reconcile_total", {"controller": controller, "result": "success"}
    ) + _sample("controller_runtime_reconcile_total", {"controller": controller, "result": "requeue_after"})


def reconcile_errors(controller: str) -> float:
    """Reconciles that raised (and were requeued rate-limited) in this process."""
    return _sample("controller_runtime_reconcile_errors_total", {"controller": controller})


def head_checks() -> float:
    """Healthy head-proxy checks so far: the in-process operator's heartbeat."""
    return _sample("kuberay_head_proxy_health_checks_total", {"result": "healthy"})


# -- the rig --------------------------------------------------------------------------------------


@dataclass
class Rig:
    env: Environment
    client: Client
    runtime: RayPodRuntime
    namespace: str

    @property
    def server(self) -> BuiltinAPIServer:
        assert self.env.server is not None, "fault knobs need the built-in API server"
        return self.env.server

    async def rs(self, name: str = "rs") -> dict[str, Any]:
        obj: dict[str, Any] = await self.client.get(c.RAYSERVICES, name, self.namespace)
        return obj

    async def ready_endpoints(self, service: str) -> list[tuple[str, int, str]]:
        """(ip, port, Pod name) of every ready endpoint of the Service's EndpointSlices."""
        slices = await self.client.list(
            ENDPOINTSLICES, self.namespace, label_selector=f"kubernetes.io/service-name={service}"
        )
        out = []
        for s in slices["items"]:
            ports = [int(p["port"]) for p in s.get("ports") or [] if p.get("port")]
            for ep in s.get("endpoints") or []:
                if (ep.get("conditions") or {}).get("ready") is True:
                    pod = (ep.get("targetRef") or {}).get("name", "")
                    out += [(ip, port, pod) for ip in ep.get("addresses") or [] for port in ports]
        return out

    async def ready_pods(self, service: str) -> set[str]:
        return {pod for _, _, pod in await self.ready_endpoints(service)}

    async def listed_pods(self, service: str) -> set[str]:
        """Every Pod named in the Service's EndpointSlices, ready or not."""
        slices = await self.client.list(
            ENDPOINTSLICES, self.namespace, label_selector=f"kubernetes.io/service-name={service}"
        )
        return {
            (ep.get("targetRef") or {}).get("name", "")
            for s in slices["items"]
            for ep in s.get("endpoints") or []
        }

    async def pods(self, cluster: str, node_type: str | None = None) -> list[dict[str, Any]]:
        selector = f"{c.RAY_CLUSTER_LABEL_KEY}={cluster}"
        if node_type:
            selector += f",{c.RAY_NODE_TYPE_LABEL_KEY}={node_type}"
        return list((await self.client.list(PODS, self.namespace, label_selector=selector))["items"])

    async def events(self, name: str) -> list[dict[str, Any]]:
        items = (await self.client.list(EVENTS, self.namespace))["items"]
        return [e for e in items if (e.get("regarding") or {}).get("name") == name]

    async def wait_ready(self, name: str = "rs", endpoints: int | None = None) -> dict[str, Any]:
        async def ready() -> dict[str, Any] | None:
            svc = await self.rs(name)
            if condition(svc, "Ready").get("status") != "True":
                return None
            if endpoints is not None and (svc.get("status") or {}).get("numServeEndpoints") != endpoints:
                return None
            if (svc.get("status") or {}).get("pendingServiceStatus", {}).get("rayClusterName"):
                return None
            return svc

        return dict(await eventually(ready, f"{name} Ready with {endpoints} endpoints"))

    async def wait_ready_pods(self, service: str, pods: set[str] | int) -> set[str]:
        async def match() -> set[str] | None:
            ready = await self.ready_pods(service)
            ok = ready == pods if isinstance(pods, set) else len(ready) == pods
            return ready if ok else None

        return set(await eventually(match, f"ready endpoints of {service} == {pods}"))


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    runtime = RayPodRuntime(timings=TIMINGS)
    async with Environment([CRDS], simulate=True, pod_runtime=runtime, probe_period_scale=PROBE_SCALE) as env:
        client = env.new_client()
        ns = await env.create_namespace()
        try:
            yield Rig(env, client, runtime, ns)
        finally:
            await client.close()
            await runtime.close()


# -- operators ------------------------------------------------------------------------------------


class InProcessOperator:
    """``build_manager`` (the wiring of ``kuberay-operator run``) on the test's event loop."""

    def __init__(self, rig: Rig) -> None:
        flags = OperatorFlags(
            metrics_addr="0",
            health_probe_bind_address="0",
            enable_leader_election=False,
            head_proxy_health_period=HEAD_CHECK_PERIOD,
            graceful_shutdown_timeout=5.0,
        )
        self.manager: Manager = build_manager(rig.env.client_config, flags)
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> InProcessOperator:
        self._task = asyncio.create_task(self.manager.run(install_signal_handlers=False))
        await asyncio.wait_for(self.manager.elected.wait(), WAIT)
        return self

    def running(self) -> bool:
        """Started and its run() has neither returned nor failed."""
        return self._task is not None and not self._task.done()

    async def stop(self) -> None:
        """Graceful stop; afterwards no part of this operator runs (its run() has returned)."""
        if self._task is None:
            return
        self.manager.stop()
        try:
            await asyncio.wait_for(self._task, 15)
        finally:
            if not self._task.done():
                self._task.cancel()
            self._task = None

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class OperatorProcess:
    """A real ``kuberay-operator run`` child against the rig's API server; SIGKILL-able."""

    def __init__(self, rig: Rig, *extra: str) -> None:
        self.argv = [
            str(OPERATOR), "run", "--kubeconfig", rig.env.kubeconfig_path,
            "--enable-leader-election=false",
            "--metrics-addr", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0",
            "--head-proxy-health-period", str(HEAD_CHECK_PERIOD), *extra,
        ]  # fmt: skip
        fd, path = tempfile.mkstemp(prefix="kuberay-reliability-", suffix=".log")
        self.log_path = Path(path)
        self._log = os.fdopen(fd, "w")
        self.popen = subprocess.Popen(
            self.argv, stdout=self._log, stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONUNBUFFERED="1")
        )

    def kill9(self) -> None:
        """SIGKILL: no drain, no lease release, nothing flushed; in-flight requests are abandoned."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(10)

    def running(self) -> bool:
        return self.popen.poll() is None

    def output(self) -> str:
        self._log.flush()
        return self.log_path.read_text()[-6000:]

    def close(self) -> None:
        self.kill9()
        self._log.close()
        self.log_path.unlink(missing_ok=True)


OperatorFactory = Callable[..., OperatorProcess]


@pytest.fixture
def operator_processes() -> Iterator[OperatorFactory]:
    """Starts ``OperatorProcess``es and makes sure each is killed (by its own pid) at teardown."""
    started: list[OperatorProcess] = []

    def start(rig: Rig, *extra: str) -> OperatorProcess:
        proc = OperatorProcess(rig, *extra)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.close()


# -- traffic --------------------------------------------------------------------------------------


@dataclass
class TrafficReport:
    sent: int = 0
    ok: int = 0
    failures: list[str] = field(default_factory=list)
    pods_hit: set[str] = field(default_factory=set)
    min_endpoints: int | None = None


class Traffic:
    """GETs through the serve Service's *currently ready* endpoints, as kube-proxy would route them.

    The endpoint list is refreshed from the EndpointSlices between requests. Bounded by
    ``max_requests`` and ``max_seconds`` (the loop ends early when either is reached; the caller
    asserts on counts, not on time).
    """

    def __init__(
        self,
        rig: Rig,
        service: str,
        path: str = "/fruit",
        *,
        max_requests: int = 4000,
        max_seconds: float = 30.0,
    ) -> None:
        self.rig, self.service, self.path = rig, service, path
        self.max_requests, self.max_seconds = max_requests, max_seconds
        self.report = TrafficReport()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._endpoints: list[tuple[str, int, str]] = []

    async def __aenter__(self) -> Traffic:
        self._endpoints = await self.rig.ready_endpoints(self.service)
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task

    async def sent_at_least(self, n: int) -> bool:
        if self.report.sent >= n:
            return True
        if self._task is not None and self._task.done():
            raise AssertionError(f"traffic loop ended early: {self.report}")
        return False

    async def _refresh(self) -> None:
        while not self._stop.is_set():
            self._endpoints = await self.rig.ready_endpoints(self.service)
            n = len(self._endpoints)
            r = self.report
            r.min_endpoints = n if r.min_endpoints is None else min(r.min_endpoints, n)
            await asyncio.sleep(0.05)

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


async def put_serve_config(head_ip: str, config: dict[str, Any], port: int = 8265) -> None:
    """What ``serve deploy`` does: PUT the declarative config straight to the head's dashboard."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        async with session.put(
            f"http://{head_ip}:{port}/api/serve/applications/",
            data=json.dumps(config),
            headers={"Content-Type": "application/json"},
        ) as resp:
            body = await resp.text()
            assert resp.status == 200, f"dashboard PUT answered {resp.status}: {body}"
