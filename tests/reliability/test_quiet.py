"""A converged system is quiet: with everything Ready and the operator running, nothing is written.

Every write of a steady operator is load on the API server and etcd that scales with the fleet.
The window is defined by work done, not by time: it closes once both controllers have reconciled
every object again (a forced informer resync, as the periodic one would) and the head-proxy checker
has probed the head several times. Then we count the requests the API server saw.
"""

from __future__ import annotations

from typing import Any

import pytest

from controllers.constants import RAYCLUSTERS, RAYSERVICES
from controllers.raycluster.setup import CONTROLLER_NAME as RAYCLUSTER_CONTROLLER
from kuberay_py.client.resources import PODS

from .conftest import InProcessOperator, Rig, Traffic, eventually, head_checks, rayservice, reconciles

WRITES = ("create", "update", "patch", "delete", "deletecollection")
pytestmark = pytest.mark.builtin_only


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


async def test_converged_rayservice_makes_zero_writes(rig: Rig) -> None:
    async with InProcessOperator(rig) as operator:
        await rig.client.create(RAYSERVICES, rayservice(), rig.namespace)
        svc = await rig.wait_ready("rs", endpoints=4)
        cluster = svc["status"]["activeServiceStatus"]["rayClusterName"]
        await eventually(lambda: _cluster_settled(rig, cluster, 3), f"{cluster} status final")
        await rig.wait_ready_pods("rs-serve-svc", 4)

        before = await rig.rs()
        log = rig.server.request_log
        log.clear()
        checks, rs_runs, rc_runs = (
            head_checks(),
            reconciles("rayservice"),
            reconciles(RAYCLUSTER_CONTROLLER),
        )
        for res in (RAYSERVICES, RAYCLUSTERS, PODS):
            operator.manager.cache.informer_for(res).resync()

        async def window_done() -> bool:
            return (
                reconciles("rayservice") >= rs_runs + 1
                and reconciles(RAYCLUSTER_CONTROLLER) >= rc_runs + 1
                and head_checks() >= checks + 10
            )

        await eventually(window_done, "a resync round and 10 head-proxy checks")
        writes = [r for r in log.records if r.verb in WRITES]
        reads = [r for r in log.records if r.verb in ("get", "list")]

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
        await rig.client.create(RAYSERVICES, rayservice(), rig.namespace)
        svc = await rig.wait_ready("rs", endpoints=4)
        cluster = svc["status"]["activeServiceStatus"]["rayClusterName"]
        await eventually(lambda: _cluster_settled(rig, cluster, 3), f"{cluster} status final")
        await rig.wait_ready_pods("rs-serve-svc", 4)
        await first.stop()
    before = await rig.rs()
    log = rig.server.request_log
    log.clear()
    checks, rs_runs, rc_runs = head_checks(), reconciles("rayservice"), reconciles(RAYCLUSTER_CONTROLLER)
    async with (
        Traffic(rig, "rs-serve-svc", max_seconds=40, max_requests=4000) as traffic,
        InProcessOperator(rig),
    ):

        async def caught_up() -> bool:
            return (
                reconciles("rayservice") >= rs_runs + 1
                and reconciles(RAYCLUSTER_CONTROLLER) >= rc_runs + 1
                and head_checks() >= checks + 10
            )

        await eventually(caught_up, "the new operator's first reconciles and 10 head-proxy checks")
        writes = [r for r in log.records if r.verb in WRITES]
        mark = traffic.report.sent
        await eventually(lambda: traffic.sent_at_least(mark + 50), "traffic after the restart")

    assert [(r.method, r.resource) for r in writes] == [("POST", "events.events.k8s.io")], writes
    resubmits = [e for e in await rig.events("rs") if e["reason"] == "UpdatedServeApplications"]
    assert sum(int((e.get("series") or {}).get("count", 1)) for e in resubmits) == 2  # create + restart
    after = await rig.rs()
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    report = traffic.report
    assert report.failures == [], report.failures[:10]
    assert report.ok == report.sent > 50
