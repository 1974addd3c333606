"""Harness for the mirrors of KubeRay v1.7.0's own e2e tests (``ray-operator/test/e2e*``).

Each test here is named after the KubeRay test it mirrors and repeats its steps and assertions on
envtest + the cluster simulator + fake Ray heads, with the real RayCluster and RayJob controllers.

What differs from the Go suites, and why:

- KubeRay's test scripts (``counter.py``, ``fail.py``, ``long_running.py``, ``stop.py``) are
  expressed in raysim's entrypoint convention (``echo``, ``sleep``, ``exit``), see ``SCRIPTS``;
  ``stop.py`` stops its own Ray job through the dashboard, which the test does here instead.
- Time-bound behaviour (activeDeadlineSeconds, preRunningDeadlineSeconds, deletion TTLs, the
  submitter-finished grace period) runs on a FakeClock given to the RayJob controller only: the
  test advances it and waits for a reconcile that *started after* the step (``E2E.barrier``)
  before asserting. That also replaces Gomega's ``Consistently`` windows: "still there after a
  reconcile that saw T+8 s" instead of "still there for 8 s of wall time". Pods, probes and
  Ray jobs keep running on real (scaled) time.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest_asyncio

from controllers.constants import RAYCLUSTERS, RAYJOBS
from controllers.raysim import RayPodRuntime
from kuberay_py.client import NotFound
from kuberay_py.client.resources import JOBS, PODS, Resource
from kuberay_py.clock import FakeClock
from kuberay_py.controller import Request, Result
from kuberay_py.envtest import Environment
from tests.polling import condition, eventually
from tests.rayjob_harness import WAIT, JobOperator, JobScenario, job_environment

__all__ = [
    "E2E",
    "SCRIPTS",
    "WAIT",
    "condition",
    "e2e_rayjob",
    "eventually",
    "ray_cluster_spec",
    "submitter_template",
]

RAY_IMAGE = "rayproject/ray:2.60.0"

# KubeRay's job scripts, as the fake Ray head understands them (see the module docstring).
SCRIPTS = {
    # counter.py: five increments of an actor named by the runtime env, printed as it goes.
    "counter": "echo test_counter got 1 && echo test_counter got 5",
    # fail.py: one line on stderr, exit code 1.
    "fail": "echo Something is seriously wrong. && exit 1",
    # long_running.py: prints a counter every second, for hours.
    "long_running": "sleep 10000",
    # stop.py: sleeps 20 s, then stops every job of the cluster (the test does the stopping).
    "stop": "sleep 10000",
}
COUNTER_RUNTIME_ENV = "env_vars:\n  counter_name: test_counter\n"


def _resources(cpu_req: str, mem_req: str, cpu_lim: str, mem_lim: str) -> dict[str, Any]:
    return {"requests": {"cpu": cpu_req, "memory": mem_req}, "limits": {"cpu": cpu_lim, "memory": mem_lim}}


def ray_cluster_spec(*, workers: int = 1) -> dict[str, Any]:
    """The cluster KubeRay's e2e suites use (support.NewRayClusterSpec): a head with the four
    Ray ports and one worker group ``small-group`` of ``workers`` (min = max = replicas)."""
    ports = [
        {"name": "gcs-server", "containerPort": 6379},
        {"name": "serve", "containerPort": 8000},
        {"name": "dashboard", "containerPort": 8265},
        {"name": "client", "containerPort": 10001},
    ]
    head = {
        "name": "ray-head",
        "image": RAY_IMAGE,
        "ports": ports,
        "resources": _resources("300m", "1G", "500m", "2G"),
    }
    worker = {"name": "ray-worker", "image": RAY_IMAGE, "resources": _resources("300m", "1G", "500m", "1G")}
    return {
        "rayVersion": "2.60.0",
        "headGroupSpec": {
            "rayStartParams": {"dashboard-host": "0.0.0.0"},
            "template": {"spec": {"containers": [head]}},
        },
        "workerGroupSpecs": [
            {
                "groupName": "small-group",
                "replicas": workers,
                "minReplicas": workers,
                "maxReplicas": workers,
                "rayStartParams": {"num-cpus": "1"},
                "template": {"spec": {"containers": [worker]}},
            }
        ],
    }


def submitter_template() -> dict[str, Any]:
    """KubeRay's JobSubmitterPodTemplateApplyConfiguration: one container, Never restart."""
    return {
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "ray-job-submitter",
                    "image": RAY_IMAGE,
                    "resources": _resources("200m", "200Mi", "500m", "500Mi"),
                }
            ],
        }
    }


def e2e_rayjob(name: str, entrypoint: str | None = None, **spec: Any) -> dict[str, Any]:
    """A RayJob as KubeRay's e2e tests build one: ``ray_cluster_spec`` plus ``spec`` fields."""
    body: dict[str, Any] = {"rayClusterSpec": ray_cluster_spec()}
    if entrypoint is not None:
        body["entrypoint"] = entrypoint
    body.update(spec)
    return {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name}, "spec": body}


@dataclass
class Reconciles:
    """Numbers RayJob reconciles as they start, so a test can wait for one that began after a
    clock step (its view of time is then the stepped one)."""

    started: int = 0
    finished: set[int] = field(default_factory=set)

    def install(self, op: JobOperator) -> None:
        inner: Callable[[Request], Awaitable[Result]] = op.rayjob.reconcile

        async def counted(request: Request) -> Result:
            seq = self.started
            self.started += 1
            try:
                return await inner(request)
            finally:
                self.finished.add(seq)

        op.rayjob.reconcile = counted  # type: ignore[method-assign]


@dataclass
class E2E(JobScenario):
    clock: FakeClock = field(default_factory=FakeClock)
    reconciles: Reconciles = field(default_factory=Reconciles)
    pokes: itertools.count[int] = field(default_factory=itertools.count)

    async def barrier(self, name: str) -> None:
        """Return once a reconcile of RayJob ``name`` that started after this call has finished.

        An annotation change wakes the RayJob controller (its primary predicate), so this does
        not depend on the controller's own requeue timers.
        """
        after = self.reconciles.started
        patch = {"metadata": {"annotations": {"e2e.test/poke": str(next(self.pokes))}}}
        try:
            await self.client.patch(RAYJOBS, name, patch, self.namespace)
        except NotFound:
            return

        async def done() -> bool:
            return any(seq >= after for seq in self.reconciles.finished)

        await eventually(done, f"a reconcile of {name} after the barrier", WAIT)

    async def advance(self, seconds: float, name: str) -> None:
        """Step the RayJob controller's clock, then let one reconcile of ``name`` see it."""
        await self.clock.advance(seconds)
        await self.barrier(name)

    async def cluster(self, name: str) -> dict[str, Any]:
        obj: dict[str, Any] = await self.client.get(RAYCLUSTERS, name, self.namespace)
        return obj

    async def until_cluster(
        self, name: str, check: Callable[[dict[str, Any]], bool], what: str, timeout: float = WAIT
    ) -> dict[str, Any]:
        async def probe() -> dict[str, Any] | None:
            obj = await self.cluster(name)
            return obj if check(obj) else None

        try:
            return dict(await eventually(probe, f"{name}: {what}", timeout))
        except AssertionError as exc:
            status = (await self.cluster(name)).get("status")
            raise AssertionError(f"{exc}\nstatus: {status}") from None

    async def pods(self, cluster: str, node_type: str | None = None) -> list[dict[str, Any]]:
        selector = f"ray.io/cluster={cluster}"
        if node_type:
            selector += f",ray.io/node-type={node_type}"
        items = (await self.client.list(PODS, self.namespace, label_selector=selector))["items"]
        return list(items)

    async def jobs(self) -> list[dict[str, Any]]:
        return list((await self.client.list(JOBS, self.namespace))["items"])


RESOURCEQUOTAS = Resource("", "v1", "ResourceQuota", "resourcequotas")


async def create_quota(sc: E2E, name: str, hard: dict[str, str]) -> None:
    """A ResourceQuota with its status filled in as kube-controller-manager's quota controller
    would (a real kube-apiserver refuses Pods with "status unknown for quota" until then; envtest
    runs no controller manager)."""
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name}, "spec": {"hard": hard}}
    created = await sc.client.create(RESOURCEQUOTAS, quota, sc.namespace)
    created["status"] = {"hard": dict(hard), "used": dict.fromkeys(hard, "0")}
    await sc.client.update_status(RESOURCEQUOTAS, created)


def state_is(value: str) -> Callable[[dict[str, Any]], bool]:
    return lambda obj: (obj.get("status") or {}).get("state") == value


def has_condition(type_: str, status: str, reason: str) -> Callable[[dict[str, Any]], bool]:
    def check(obj: dict[str, Any]) -> bool:
        cond = condition(obj, type_)
        return cond.get("status") == status and cond.get("reason") == reason

    return check


Shared = tuple[Environment, RayPodRuntime, JobOperator, FakeClock, Reconciles]


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def e2e_shared() -> AsyncIterator[Shared]:
    clock = FakeClock(wall_start=datetime.now(UTC))
    async with job_environment(clock=clock) as (env, runtime, op):
        reconciles = Reconciles()
        reconciles.install(op)
        yield env, runtime, op, clock, reconciles


@pytest_asyncio.fixture(loop_scope="session")
async def e2e(e2e_shared: Shared) -> AsyncIterator[E2E]:
    env, runtime, op, clock, reconciles = e2e_shared
    client = env.new_client()
    ns = await env.create_namespace()
    try:
        yield E2E(env, client, ns, runtime, op, clock=clock, reconciles=reconciles)
    finally:
        await env.delete_namespace(ns)
        await client.close()
