"""Steady state costs nothing and persistent failures cost a bounded rate, on virtual time.

The manager (controller queue, retry limiter, resync, event pacing, client rate limiter) runs on a
:class:`~kuberay_py.clock.FakeClock`; the built-in API server runs for real. The test moves the
fake clock in steps and lets the operator finish what each step made due (real I/O) before the
next one, so hours of operator time take seconds and every count is exact. Requests are counted
by the API server's request log (kube-apiserver's audit log in real mode).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from controllers import constants as C
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.setup import setup
from kuberay_py.client import Client
from kuberay_py.client.resources import EVENTS
from kuberay_py.clock import FakeClock
from kuberay_py.envtest import Environment
from kuberay_py.envtest.apiserver.faults import RequestRecord
from kuberay_py.metrics import registry
from tests.in_loop_manager import in_loop_manager, start_in_loop
from tests.polling import eventually

from .conftest import WAIT, list_pods, sample_cluster

pytestmark = pytest.mark.asyncio(loop_scope="session")

WRITES = ("create", "update", "patch", "delete", "deletecollection")
SECONDS = 80.0  # fake seconds the 403 test runs: the burst and one minute after it
BURST = 20.0  # first attempts of 200 clusters, then the retry bucket's burst of 100


class VirtualOperator:
    """A manager with the RayCluster controller on a FakeClock, and a way to step it."""

    def __init__(self, env: Environment, namespace: str) -> None:
        self.clock = FakeClock()
        # No client-side throttling (it would wait on the fake clock, and the bound under test is the
        # controller's retry limiter, not the client's QPS).
        config = dataclasses.replace(env.client_config, qps=1e6, burst=1_000_000)
        self.manager = in_loop_manager(config, clock=self.clock, namespaces=[namespace])
        setup(self.manager, options=RayClusterOptions.from_env({}), clock=self.clock)
        self.task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> VirtualOperator:
        self.task = start_in_loop(self.manager)
        await asyncio.wait_for(self.manager.elected.wait(), WAIT)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.manager.stop()
        assert self.task is not None
        stopper = asyncio.ensure_future(asyncio.wait_for(asyncio.shield(self.task), WAIT))
        while not stopper.done():  # the graceful-shutdown timer runs on the fake clock too
            await self.clock.advance(1.0)
            await asyncio.sleep(0.01)
        await stopper

    def _busy(self) -> bool:
        if any(len(c.queue) or c.queue.processing for c in self.manager.controllers.values()):
            return True
        return not self.manager.events.idle

    async def quiesce(self) -> None:
        """Until the controllers and the event writer have nothing left to do at this fake time.

        Idle twice in a row, a short real pause apart, so watch events caused by the last write
        (which may enqueue another reconcile) have arrived.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT
        calm = 0
        while calm < 2:
            if loop.time() > deadline:
                pytest.fail("the operator did not become idle")
            await asyncio.sleep(0.01)
            calm = 0 if self._busy() else calm + 1

    async def run_for(self, seconds: float, step: float) -> None:
        """Move the fake clock ``seconds`` forward in ``step`` increments, quiescing after each."""
        for _ in range(round(seconds / step)):
            await self.clock.advance(step)
            await self.quiesce()


def _ours(records: list[RequestRecord], namespace: str) -> list[RequestRecord]:
    return [r for r in records if r.namespace == namespace]


@pytest_asyncio.fixture(loop_scope="session")
async def quiet_namespace(crd_env: Environment) -> AsyncIterator[str]:
    ns = await crd_env.create_namespace(generate_name="quiet-")
    try:
        yield ns
    finally:
        await crd_env.delete_namespace(ns)


async def test_clusters_whose_pods_stay_pending_converge_then_send_nothing_for_hours(
    crd_env: Environment, rc_client: Client, quiet_namespace: str
) -> None:
    """No kubelet: Pods stay Pending forever. After convergence: zero requests over 2 fake hours,
    through 24 resyncs of every cluster."""
    ns = quiet_namespace
    log = crd_env.request_log
    async with VirtualOperator(crd_env, ns) as op:
        for i in range(3):
            await rc_client.create(C.RAYCLUSTERS, sample_cluster(f"pending-{i}", ns, replicas=2), ns)

        async def all_pods() -> bool:
            return len(await list_pods(rc_client, ns)) == 9

        await eventually(all_pods, "3 heads and 6 workers created")
        await op.run_for(20.0, 1.0)  # convergence: the status (coalescing window 5 s), events
        statuses = [
            (await rc_client.get(C.RAYCLUSTERS, f"pending-{i}", ns)).get("status") or {} for i in range(3)
        ]
        assert all(s.get("desiredWorkerReplicas") == 2 for s in statuses), statuses
        assert all(s.get("readyWorkerReplicas", 0) == 0 for s in statuses), statuses
        records = await log.records()
        converged = _ours(records, ns)
        status_writes = [r for r in converged if r.resource == "rayclusters.ray.io/status"]
        assert len(status_writes) == 3, status_writes  # one per cluster, written complete

        mark = len(records)
        reconciles_before = _reconciles(op)
        await op.run_for(2 * 3600.0, 150.0)
        steady = _ours((await log.records())[mark:], ns)
        assert _reconciles(op) >= reconciles_before + 3 * 23  # every cluster resynced all along

    assert [r for r in steady if r.verb in WRITES] == []
    assert [r for r in steady if r.verb in ("get", "list")] == []  # reads come from the cache
    assert [p["status"].get("phase", "Pending") for p in await list_pods(rc_client, ns)] == ["Pending"] * 9


def _reconciles(op: VirtualOperator) -> int:
    return int(
        sum(
            registry.get_sample_value(
                "controller_runtime_reconcile_total", {"controller": "raycluster-controller", "result": r}
            )
            or 0
            for r in ("success", "requeue_after", "requeue", "error")
        )
    )


@pytest.mark.builtin_only(reason="answers every Pod create with an injected 403")
async def test_200_clusters_whose_pod_creates_get_403_cost_a_bounded_request_rate(
    crd_env: Environment, rc_client: Client, quiet_namespace: str
) -> None:
    """A namespace where every Pod create is Forbidden: the overall retry bucket holds the total at
    <= 10 requests/s after the burst, and each cluster's Warning is one Event, patched rarely."""
    ns = quiet_namespace
    server = crd_env.server
    assert server is not None
    fault = server.inject(
        "POST",
        rf"^/api/v1/namespaces/{ns}/pods$",
        403,
        count=-1,
        message=f"pods is forbidden: unable to create new content in namespace {ns}",
    )
    clusters = 200
    try:
        for i in range(clusters):
            await rc_client.create(C.RAYCLUSTERS, sample_cluster(f"denied-{i:03d}", ns, replicas=1), ns)
        log = server.request_log
        mark = len(log.records)
        times: list[tuple[float, RequestRecord]] = []
        async with VirtualOperator(crd_env, ns) as op:
            start = op.clock.now()
            for _ in range(int(SECONDS / 2)):
                await op.clock.advance(2.0)
                await op.quiesce()
                new = _ours(log.records[mark:], ns)
                mark = len(log.records)
                times += [(op.clock.now() - start, r) for r in new]
            await asyncio.wait_for(op.manager.events.flush(), WAIT)  # the Warnings' final counts
            listed = (await rc_client.list(EVENTS, ns))["items"]
        assert fault.hits >= clusters
    finally:
        server.faults.clear()

    mine = [(t, r) for t, r in times if r.verb in WRITES]
    pod_creates = [t for t, r in mine if r.resource == "pods"]
    assert len(pod_creates) > clusters + 10 * (SECONDS - BURST)  # it kept retrying every cluster
    # After the burst (every cluster's first attempt, then the retry bucket's 100 tokens): the
    # bucket's 10 retries a second, each one Pod create, and nothing else.
    window = SECONDS - BURST
    after = [(t, r) for t, r in times if t > BURST]
    assert len(after) / window <= 10.0, Counter(r.resource for _, r in after)
    assert {r.resource for _, r in after} == {"pods"}
    # One aggregated Warning per cluster, counting every failed create; nothing per retry.
    warnings = [e for e in listed if e["reason"] == C.EVENT_FAILED_TO_CREATE_HEAD_POD]
    assert len(warnings) == clusters
    assert sum(int((e.get("series") or {}).get("count", 1)) for e in warnings) == len(pod_creates)
    event_writes = [(t, r) for t, r in mine if r.resource == "events.events.k8s.io"]
    assert all(r.verb == "create" for _, r in event_writes)  # the Warning and the Service's Normal
    assert len(event_writes) == 2 * clusters
    assert all(t <= BURST for t, _ in event_writes)  # so after the burst: 0 per object per minute
    per_object = Counter(e["regarding"]["name"] for e in listed)
    assert set(per_object.values()) == {2} and len(per_object) == clusters
