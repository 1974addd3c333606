"""A converged system is quiet: with everything Ready and the operator running, nothing is written.

Every write of a steady operator is load on the API server and etcd that scales with the fleet.
The window is defined by work done, not by time: it closes once both controllers have reconciled
every object again (a forced informer resync, as the periodic one would) and the head-proxy checker
has probed the head several times. Then we count the requests the API server saw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controllers.constants import RAYCLUSTERS, RAYSERVICES
from controllers.raycluster.setup import CONTROLLER_NAME as RAYCLUSTER_CONTROLLER
from kuberay_py.client.resources import PODS
from kuberay_py.envtest.apiserver.faults import RequestRecord

from .conftest import InProcessOperator, Rig, Traffic, eventually, head_checks, reconciles

WRITES = ("create", "update", "patch", "delete", "deletecollection")


async def _cluster_settled(rig: Rig, name: str, workers: int) -> dict[str, Any] | None:
    """Every counter the RayCluster controller may hold back for its coalescing window is final."""
    rc: dict[str, Any] = await rig.client.get(RAYCLUSTERS, name, rig.namespace)
    status = rc.get("status") or {}
    head = (await rig.pods(name, "head"))[0]
    final = (
        status.get("state") == "ready"
        and status.get("readyWorkerReplicas") == workers
        and status.get("availableWorkerReplicas") == workers
        and (status.get("head") or {}).get("podIP") == head["status"].get("podIP")
        and status.get("observedGeneration") == rc["metadata"]["generation"]
    )
    return rc if final else None


async def _converged(rig: Rig) -> str:
    """The sample RayService serving from all four Pods, and its cluster's status final."""
    cluster = await rig.serve_sample()
    await _settled(rig, cluster)
    return cluster


async def _settled(rig: Rig, cluster: str) -> None:
    await rig.wait_ready("rs", endpoints=4)
    await eventually(lambda: _cluster_settled(rig, cluster, 3), f"{cluster} status final")


def _world_moved(records: list[RequestRecord]) -> bool:
    """Whether the simulated kubelet changed a Pod's status in the window: a readiness probe that
    timed out on a loaded machine (the fake Ray shares the test's event loop). The operator then
    rightly reacts, so such a window cannot judge quietness; the tests take another one, once
    everything is back, at most three in all."""
    return any(r.resource == "pods/status" for r in records)


@dataclass(frozen=True)
class Progress:
    """The operator's work counters at one moment, so a test can wait for a whole round after it
    (a reconcile of each kind and ten head-proxy checks) before judging what it wrote."""

    rayservice: float
    raycluster: float
    checks: float

    @classmethod
    def now(cls) -> Progress:
        return cls(reconciles("rayservice"), reconciles(RAYCLUSTER_CONTROLLER), head_checks())

    def a_round_passed(self) -> bool:
        now = Progress.now()
        return (
            now.rayservice >= self.rayservice + 1
            and now.raycluster >= self.raycluster + 1
            and now.checks >= self.checks + 10
        )


async def test_converged_rayservice_makes_zero_writes(rig: Rig) -> None:
    async with InProcessOperator(rig) as operator:
        log = rig.env.request_log
        cluster = await _converged(rig)
        for window in range(3):
            if window:
                await _settled(rig, cluster)
            before = await rig.rs()
            await log.clear()
            since = Progress.now()
            for res in (RAYSERVICES, RAYCLUSTERS, PODS):
                operator.manager.cache.informer_for(res).resync()
            await eventually(since.a_round_passed, "a resync round and 10 head-proxy checks")
            records = await log.records()
            if not _world_moved(records):
                break
        else:
            raise AssertionError("a Pod's status changed in each of three windows; none to judge")
        writes = [r for r in records if r.verb in WRITES]
        reads = [r for r in records if r.verb in ("get", "list")]

    assert writes == [], writes
    # reads served from the informer caches: the steady operator does not poll the API either
    assert reads == [], reads
    after = await rig.rs()
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


async def test_restarting_the_operator_on_a_converged_system_changes_nothing(rig: Rig) -> None:
    """A new operator process adopts what it finds; its only write is one Event.

    It re-submits serveConfigV2 once (what this process submitted is kept in memory, as in KubeRay;
    Ray treats an identical declarative config as a no-op) and records that as
    ``UpdatedServeApplications``. Nothing else: no status rewrite, no label patch, no Pod churn,
    and traffic does not notice.
    """
    async with InProcessOperator(rig) as first:
        cluster = await _converged(rig)
        await first.stop()
    log = rig.env.request_log
    for restarts in range(1, 4):
        before = await rig.rs()
        await log.clear()
        since = Progress.now()
        async with (
            Traffic(rig, "rs-serve-svc", max_seconds=40, max_requests=4000) as traffic,
            InProcessOperator(rig) as operator,
        ):
            await eventually(
                since.a_round_passed, "the new operator's first reconciles and 10 head-proxy checks"
            )
            records = await log.records()
            await traffic.flows(50, "traffic after the restart")
            moved = _world_moved(records)
            if moved and restarts < 3:
                await _settled(rig, cluster)  # this operator brings everything back; restart again
                await operator.stop()
        if not moved:
            break
    else:
        raise AssertionError("a Pod's status changed in each of three restarts; none to judge")
    writes = [r for r in records if r.verb in WRITES]

    assert [(r.method, r.resource) for r in writes] == [("POST", "events.events.k8s.io")], writes
    resubmits = [e for e in await rig.events("rs") if e["reason"] == "UpdatedServeApplications"]
    # one at the create, one per restart
    assert sum(int((e.get("series") or {}).get("count", 1)) for e in resubmits) == 1 + restarts
    after = await rig.rs()
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    report = traffic.report
    report.assert_all_served(50)
