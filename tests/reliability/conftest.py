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
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from controllers import constants as c
from controllers.cli.flags import OperatorFlags
from controllers.cli.operator import build_manager
from controllers.raysim import RayPodRuntime, Timings
from kuberay_py.client.resources import ENDPOINTSLICES
from kuberay_py.envtest import Environment
from kuberay_py.envtest.apiserver.server import BuiltinAPIServer
from kuberay_py.manager import Manager
from kuberay_py.metrics import registry
from tests import polling
from tests import rayservice_harness as harness

ROOT = Path(__file__).resolve().parents[2]
CRDS = str(ROOT / "config" / "crd" / "bases")
OPERATOR = Path(sys.executable).with_name("kuberay-operator")
PROBE_SCALE = 0.1  # the injected worker readiness probe (period 5 s) runs every 0.5 s
TIMINGS = Timings(build_s=0.3, replica_start_s=0.3, drain_s=3.0, unschedulable_warn_s=30.0)
HEAD_CHECK_PERIOD = 0.3
WAIT = 40.0  # generous bound for "something is stuck"; never an assertion on elapsed time


# -- objects and waiting (shared with tests/scenario and tests/integration/rayservice) ----------------

serve_config = harness.serve_config
rayservice = harness.rayservice
condition = polling.condition


async def eventually(fn: Callable[[], Awaitable[Any]], what: str, timeout: float = WAIT) -> Any:
    """:func:`tests.polling.eventually` with this suite's bound (NotFound counts as "not yet")."""
    return await polling.eventually(fn, what, timeout)


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
class Rig(harness.ServingNamespace):
    """The rig's API server, simulator and fake Ray, and reads of its test namespace."""

    env: Environment
    runtime: RayPodRuntime

    @property
    def server(self) -> BuiltinAPIServer:
        assert self.env.server is not None, "fault knobs need the built-in API server"
        return self.env.server

    async def rs(self, name: str = "rs") -> dict[str, Any]:
        obj: dict[str, Any] = await self.client.get(c.RAYSERVICES, name, self.namespace)
        return obj

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

    async def wait_ready(self, name: str = "rs", endpoints: int | None = None) -> dict[str, Any]:
        """Ready, and no upgrade in flight (no pending cluster)."""
        return await self.rayservice_ready(name, endpoints, settled=True, timeout=30.0)

    async def serve_sample(self) -> str:
        """Create the sample RayService ``rs`` and wait until it serves from all four Pods (head +
        three workers); returns its active cluster's name."""
        await self.client.create(c.RAYSERVICES, harness.rayservice(), self.namespace)
        svc = await self.wait_ready("rs", endpoints=4)
        await self.wait_ready_pods("rs-serve-svc", 4)
        return str(svc["status"]["activeServiceStatus"]["rayClusterName"])

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
            yield Rig(client=client, namespace=ns, env=env, runtime=runtime)
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

TrafficReport = harness.TrafficReport
Traffic = harness.Traffic  # Traffic(rig, service, ...): the Rig is its source of ready endpoints


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
