"""RayJob scenario harness: envtest + simulator + fake Ray + the RayCluster and RayJob controllers.

One Environment per test module (each test gets its own namespace); the operator runs on this
loop with short dashboard polls. RayJob manifests are KubeRay's ``ray-job.sample.yaml`` cut to a
head-only cluster, with a test entrypoint following raysim's convention (``sleep N``, ``exit N``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from controllers.constants import RAYCLUSTERS, RAYJOBS
from controllers.ray.dashboard import DashboardClientFactory
from controllers.raycluster.setup import setup as setup_raycluster
from controllers.rayjob.options import RayJobOptions
from controllers.rayjob.reconciler import RayJobReconciler
from controllers.rayjob.setup import setup as setup_rayjob
from controllers.raysim import RayPodRuntime, Timings
from controllers.raysim.jobs import JobTable
from kuberay_py.client import Client, ClientConfig, NotFound
from kuberay_py.client.resources import SECRETS, SERVICES
from kuberay_py.clock import Clock
from kuberay_py.envtest import Environment
from kuberay_py.manager import Manager
from tests.in_loop_manager import in_loop_manager, start_in_loop, stop_in_loop
from tests.polling import eventually

ROOT = Path(__file__).resolve().parents[1]
CRD_DIR = ROOT / "config" / "crd" / "bases"
SAMPLES = ROOT / "tests" / "fixtures" / "kuberay" / "samples"
PROBE_SCALE = 0.1
TIMINGS = Timings(build_s=0.3, replica_start_s=0.3, drain_s=3.0, unschedulable_warn_s=30.0)
OPTIONS = RayJobOptions(poll_min=0.2, poll_max=1.0, status_check_timeout=300.0)
WAIT = 40.0  # bound on eventual consistency on a loaded 2-core machine, not a performance figure


@dataclass
class JobOperator:
    manager: Manager
    rayjob: RayJobReconciler
    task: asyncio.Task[None]

    async def stop(self) -> None:
        await stop_in_loop(self.manager, self.task)


def start_job_operator(
    config: ClientConfig,
    options: RayJobOptions = OPTIONS,
    clock: Clock | None = None,
    dashboards: DashboardClientFactory | None = None,
) -> JobOperator:
    """The RayCluster and RayJob controllers on this loop; ``clock`` (e.g. a FakeClock) is the
    RayJob controller's alone, so deadlines and TTLs can be stepped while Pods run in real time."""
    mgr = in_loop_manager(config)
    setup_raycluster(mgr, max_concurrent_reconciles=4)
    reconciler = setup_rayjob(
        mgr, dashboard_factory=dashboards or DashboardClientFactory(), options=options, clock=clock
    )
    return JobOperator(mgr, reconciler, start_in_loop(mgr))


def rayjob(name: str, entrypoint: str = "sleep 1", **spec: Any) -> dict[str, Any]:
    """``ray-job.sample.yaml``'s RayJob, named ``name``, head only, with ``spec`` overrides."""
    doc = next(
        d
        for d in yaml.safe_load_all((SAMPLES / "ray-job.sample.yaml").read_text())
        if d.get("kind") == "RayJob"
    )
    doc = copy.deepcopy(doc)
    doc["metadata"] = {"name": name}
    doc["spec"].pop("runtimeEnvYAML", None)
    doc["spec"]["entrypoint"] = entrypoint
    cluster = doc["spec"]["rayClusterSpec"]
    cluster.pop("workerGroupSpecs", None)
    head = cluster["headGroupSpec"]["template"]["spec"]
    head.pop("volumes", None)
    for c in head["containers"]:
        c.pop("volumeMounts", None)
    doc["spec"].update(spec)
    return doc


def job_table(runtime: RayPodRuntime, namespace: str, cluster: str) -> JobTable:
    """The job table of the latest fake Ray cluster ``namespace/cluster``, running or already
    shut down: a finished RayJob may delete its cluster (``shutdownAfterJobFinishes``, deletion
    rules) before a test reads how many submissions it got."""
    for sim in reversed(runtime.history):
        if (sim.namespace, sim.name) == (namespace, cluster):
            return sim.jobs
    raise KeyError(f"no fake Ray cluster {namespace}/{cluster} was ever started")


@dataclass
class JobScenario:
    env: Environment
    client: Client
    namespace: str
    runtime: RayPodRuntime
    operator: JobOperator

    async def create(self, doc: dict[str, Any]) -> dict[str, Any]:
        created: dict[str, Any] = await self.client.create(RAYJOBS, doc, self.namespace)
        return created

    async def get(self, name: str) -> dict[str, Any]:
        obj: dict[str, Any] = await self.client.get(RAYJOBS, name, self.namespace)
        return obj

    async def patch_spec(self, name: str, spec: dict[str, Any]) -> None:
        await self.client.patch(RAYJOBS, name, {"spec": spec}, self.namespace)

    async def until(self, name: str, want: dict[str, Any], timeout: float = WAIT) -> dict[str, Any]:
        """The RayJob once every ``status`` field in ``want`` has the wanted value."""

        async def check() -> dict[str, Any] | None:
            job = await self.get(name)
            status = job.get("status") or {}
            return job if all(status.get(k) == v for k, v in want.items()) else None

        try:
            return dict(await eventually(check, f"{name} status {want}", timeout))
        except AssertionError as exc:
            status = dict((await self.get(name)).get("status") or {})
            status.pop("rayClusterStatus", None)
            raise AssertionError(f"{exc}\nstatus: {status}") from None

    async def gone(self, res: Any, name: str, timeout: float = WAIT) -> None:
        async def absent() -> bool | None:
            try:
                await self.client.get(res, name, self.namespace)
            except NotFound:
                return True
            return None

        await eventually(absent, f"{res.kind} {name} deleted", timeout)

    def jobs_of(self, cluster: str) -> JobTable:
        return job_table(self.runtime, self.namespace, cluster)

    async def clusters(self) -> list[str]:
        items = (await self.client.list(RAYCLUSTERS, self.namespace))["items"]
        return sorted(i["metadata"]["name"] for i in items)


@contextlib.asynccontextmanager
async def simulated_environment(runtime: RayPodRuntime) -> AsyncIterator[Environment]:
    """envtest with the cluster simulator running ``runtime``'s Ray Pods. The simulated kubelet
    looks up what a real one would through the API server: a Service's selector (for the serve
    endpoints) and a Secret's key (a token-auth head's RAY_AUTH_TOKEN). Closes ``runtime`` after."""
    async with Environment(
        [str(CRD_DIR)], simulate=True, pod_runtime=runtime, probe_period_scale=PROBE_SCALE
    ) as env:
        lookups = env.new_client()

        async def selector(namespace: str, name: str) -> dict[str, str] | None:
            try:
                svc = await lookups.get(SERVICES, name, namespace)
            except NotFound:
                return None
            return dict((svc.get("spec") or {}).get("selector") or {})

        async def secret_value(namespace: str, name: str, key: str) -> str | None:
            try:
                secret = await lookups.get(SECRETS, name, namespace)
            except NotFound:
                return None
            raw = (secret.get("data") or {}).get(key)
            return base64.b64decode(raw).decode() if raw is not None else None

        runtime.service_selector = selector
        runtime.secret_value = secret_value
        try:
            yield env
        finally:
            await runtime.close()
            await lookups.close()


@contextlib.asynccontextmanager
async def job_environment(
    clock: Clock | None = None, options: RayJobOptions = OPTIONS, runtime: RayPodRuntime | None = None
) -> AsyncIterator[tuple[Environment, RayPodRuntime, JobOperator]]:
    """The simulated environment with the RayCluster and RayJob controllers running."""
    runtime = runtime or RayPodRuntime(timings=TIMINGS)
    async with simulated_environment(runtime) as env:
        op = start_job_operator(env.client_config, options, clock=clock)
        try:
            yield env, runtime, op
        finally:
            await op.stop()


@contextlib.asynccontextmanager
async def job_scenario(
    options: RayJobOptions = OPTIONS, runtime: RayPodRuntime | None = None
) -> AsyncIterator[JobScenario]:
    """A test's own environment and operator, for operator options (or a runtime) no other test
    shares; one namespace in it."""
    async with job_environment(options=options, runtime=runtime) as (env, rt, op), env.new_client() as client:
        yield JobScenario(env, client, await env.create_namespace(), rt, op)
