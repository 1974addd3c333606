"""Operator restart is safe: SIGKILL mid-reconcile, then a new process takes over.

What a controller keeps only in memory (create/delete expectations, timers) dies with it; what it
needs to stay correct across a restart must be recoverable from the API. These tests kill a real
``kuberay-operator run`` process with SIGKILL (no drain, nothing flushed) at the worst moments.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from controllers.constants import RAYCLUSTERS, RAYSERVICES
from controllers.rayservice.cluster import DELETION_DEADLINE_ANNOTATION_KEY
from kuberay_py.client import NotFound
from kuberay_py.client.resources import LEASES, PODS
from tests.rayservice_harness import new_ray_version, sample

from .conftest import OperatorFactory, Rig, Traffic, eventually, rayservice

WORKERS = 8
# A real kube-apiserver cannot be slowed down on cue: the tests that kill the operator while its
# Pod creates are in flight hold them with the built-in server's injected latency.
SLOW_CREATES = pytest.mark.builtin_only(
    reason="holds Pod creates in flight with injected request latency; kube-apiserver has no such knob"
)


def raycluster(name: str, workers: int) -> dict[str, Any]:
    obj = sample("ray-cluster.sample.yaml")
    obj["metadata"] = {"name": name}
    group = obj["spec"]["workerGroupSpecs"][0]
    group.update(replicas=workers, minReplicas=0, maxReplicas=workers + 2)
    return obj


async def _pod_writes(rig: Rig, verb: str) -> int:
    """Successful Pod ``verb`` requests (the simulator's own status writes are ``pods/status``)."""
    return sum(
        1
        for r in await rig.env.request_log.records()
        if r.verb == verb and r.resource == "pods" and r.namespace == rig.namespace and r.status < 300
    )


@SLOW_CREATES
async def test_sigkill_while_creating_workers_then_restart_creates_no_duplicates(
    rig: Rig, operator_processes: OperatorFactory
) -> None:
    ns = rig.namespace
    await rig.env.request_log.clear()
    # every Pod create takes a while, so the slow-start batches (1, 2, 4, 1) are still going out
    # when the first worker appears and the operator is killed
    slow = rig.server.inject("POST", rf"^/api/v1/namespaces/{ns}/pods$", 0, count=-1, delay=0.4)
    first = operator_processes(rig)
    await rig.client.create(RAYCLUSTERS, raycluster("rc", WORKERS), ns)

    async def some_workers() -> list[dict[str, Any]]:
        return await rig.pods("rc", "worker")

    await eventually(some_workers, "the first worker Pod")
    first.kill9()
    at_kill = {p["metadata"]["name"]: p["metadata"]["uid"] for p in await rig.pods("rc")}
    killed_with = len(at_kill) - 1  # minus the head
    assert 1 <= killed_with < WORKERS, f"not killed mid-scale-up: {killed_with} workers"
    print(f"killed with {killed_with}/{WORKERS} workers created")
    slow.remaining = 0  # creates are fast again (requests still in flight finish on their own)

    second = operator_processes(rig)

    async def converged() -> dict[str, Any] | None:
        rc: dict[str, Any] = await rig.client.get(RAYCLUSTERS, "rc", ns)
        status = rc.get("status") or {}
        ok = status.get("state") == "ready" and status.get("readyWorkerReplicas") == WORKERS
        return rc if ok else None

    rc = await eventually(converged, f"rc ready with {WORKERS} workers", timeout=60)
    assert second.running(), second.output()
    assert rc["status"]["availableWorkerReplicas"] == WORKERS
    heads, workers = await rig.pods("rc", "head"), await rig.pods("rc", "worker")
    assert len(heads) == 1 and len(workers) == WORKERS
    # exactly one create per Pod across both processes: never a duplicate, not even briefly
    assert await _pod_writes(rig, "create") == 1 + WORKERS
    # nothing that existed when the first operator died was deleted or replaced
    now = {p["metadata"]["name"]: p["metadata"]["uid"] for p in heads + workers}
    assert at_kill.items() <= now.items()
    assert await _pod_writes(rig, "delete") == 0 and await _pod_writes(rig, "deletecollection") == 0
    assert not any(p["metadata"].get("deletionTimestamp") for p in heads + workers)


def _parse(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone(UTC)


async def test_old_cluster_deletion_deadline_survives_a_sigkill(
    rig: Rig, operator_processes: OperatorFactory
) -> None:
    ns = rig.namespace
    first = operator_processes(rig)
    await rig.client.create(RAYSERVICES, rayservice(workers=1, replicas=1, delay=3), ns)
    svc = await rig.wait_ready("rs", endpoints=2)
    old = svc["status"]["activeServiceStatus"]["rayClusterName"]

    # a new cluster, then the old one dangles
    await rig.edit_rayservice("rs", new_ray_version)

    async def deadline() -> str | None:
        rc = await rig.client.get(RAYCLUSTERS, old, ns)
        value: str | None = (rc["metadata"].get("annotations") or {}).get(DELETION_DEADLINE_ANNOTATION_KEY)
        return value

    scheduled = await eventually(deadline, f"{old} scheduled for deletion")
    first.kill9()

    # While no operator runs, the user raises the delay to 10 minutes. KubeRay keeps the deadline
    # in memory only, so a restarted KubeRay would start a fresh one (now + delay): the old
    # cluster would linger for 10 minutes, far past this test's bound. The deadline already on
    # the cluster must win.
    await rig.client.patch(RAYSERVICES, "rs", {"spec": {"rayClusterDeletionDelaySeconds": 600}}, ns)
    second = operator_processes(rig)

    seen: set[str] = set()

    async def deleted() -> bool:
        try:
            value = await deadline()
        except NotFound:
            return True
        seen.add(value or "<none>")
        return False

    await eventually(deleted, f"{old} deleted at its original deadline {scheduled}")
    assert second.running(), second.output()
    assert seen <= {scheduled}, f"the deadline was rewritten: {seen}"

    # the delete came from the new process, and not before the deadline (the event's own time).
    # Events are written asynchronously, after the delete: wait for it rather than read once.
    async def deletion_events() -> list[dict[str, Any]]:
        return [e for e in await rig.events("rs") if e["reason"] == "DeletedRayCluster" and old in e["note"]]

    deletions = await eventually(deletion_events, f"the DeletedRayCluster event for {old}")
    assert len(deletions) == 1, deletions
    assert _parse(deletions[0]["eventTime"]) >= _parse(scheduled)
    cur = await rig.wait_ready("rs", endpoints=2)
    assert cur["status"]["activeServiceStatus"]["rayClusterName"] != old
    assert len((await rig.client.list(RAYCLUSTERS, ns))["items"]) == 1
    active = cur["status"]["activeServiceStatus"]["rayClusterName"]

    async def only_active_pods() -> bool:  # the old cluster's Pods go with it (garbage collector)
        pods = (await rig.client.list(PODS, ns))["items"]
        return {p["metadata"]["labels"]["ray.io/cluster"] for p in pods} == {active}

    await eventually(only_active_pods, f"only {active}'s Pods left")


@SLOW_CREATES
async def test_sigkill_mid_upgrade_under_traffic_then_restart_finishes_the_upgrade(
    rig: Rig, operator_processes: OperatorFactory
) -> None:
    ns = rig.namespace
    first = operator_processes(rig)
    await rig.client.create(RAYSERVICES, rayservice(delay=2), ns)
    svc = await rig.wait_ready("rs", endpoints=4)
    old = svc["status"]["activeServiceStatus"]["rayClusterName"]
    await rig.wait_ready_pods("rs-serve-svc", 4)
    await rig.env.request_log.clear()

    async with Traffic(rig, "rs-serve-svc", max_seconds=60, max_requests=8000) as traffic:
        slow = rig.server.inject("POST", rf"^/api/v1/namespaces/{ns}/pods$", 0, count=-1, delay=0.4)
        await rig.edit_rayservice("rs", new_ray_version)

        async def new_cluster_workers() -> str | None:
            for rc in (await rig.client.list(RAYCLUSTERS, ns))["items"]:
                name = rc["metadata"]["name"]
                if name != old and await rig.pods(name, "worker"):
                    return str(name)
            return None

        new = await eventually(new_cluster_workers, "the first worker Pod of the new cluster")
        first.kill9()
        killed_with = len(await rig.pods(new, "worker"))
        assert 1 <= killed_with < 3, f"not killed mid-scale-up: {killed_with} workers"
        slow.remaining = 0
        second = operator_processes(rig)

        async def promoted() -> dict[str, Any] | None:
            cur = await rig.rs()
            status = cur.get("status") or {}
            done = (status.get("activeServiceStatus") or {}).get("rayClusterName") == new and not (
                status.get("pendingServiceStatus") or {}
            ).get("rayClusterName")
            return cur if done else None

        await eventually(promoted, f"{new} promoted", timeout=60)

        async def old_gone() -> bool:
            return not await rig.pods(old) and not [
                rc
                for rc in (await rig.client.list(RAYCLUSTERS, ns))["items"]
                if rc["metadata"]["name"] == old
            ]

        await eventually(old_gone, f"{old} and its Pods deleted after the delay", timeout=60)
        await rig.wait_ready("rs", endpoints=4)
        await traffic.flows(50, "traffic on the new cluster")

    assert second.running(), second.output()
    report = traffic.report
    report.assert_all_served(200)
    assert report.min_endpoints is not None and report.min_endpoints >= 1
    log = await rig.env.request_log.records()
    created = [r for r in log if r.verb == "create" and r.status == 201]
    # one new cluster and one Pod each for its head and 3 workers, across both processes
    assert sum(1 for r in created if r.resource == "rayclusters.ray.io") == 1
    assert sum(1 for r in created if r.resource == "pods") == 4
    assert len(await rig.pods(new, "head")) == 1 and len(await rig.pods(new, "worker")) == 3
    # every delete was of the old cluster or its Pods (the garbage collector's cascade)
    deletes = [r.path for r in log if r.verb in ("delete", "deletecollection")]
    assert deletes and all(path.rsplit("/", 1)[-1].startswith(old) for path in deletes), deletes


@SLOW_CREATES
async def test_sigkill_of_the_leader_mid_scale_up_hands_over_to_the_standby(
    rig: Rig, operator_processes: OperatorFactory
) -> None:
    """Two replicas with leader election, as a production Deployment runs them."""
    ns = rig.namespace
    election = ("--enable-leader-election=true", "--leader-election-namespace", "default")

    async def holder() -> str | None:
        lease = await rig.client.get(LEASES, "ray-operator-leader", "default")
        value: str | None = (lease.get("spec") or {}).get("holderIdentity")
        return value

    leader = operator_processes(rig, *election)
    first_holder = await eventually(holder, "the first replica to take the lease")
    standby = operator_processes(rig, *election)
    await rig.env.request_log.clear()
    slow = rig.server.inject("POST", rf"^/api/v1/namespaces/{ns}/pods$", 0, count=-1, delay=0.4)
    await rig.client.create(RAYCLUSTERS, raycluster("rc", WORKERS), ns)
    await eventually(lambda: rig.pods("rc", "worker"), "the first worker Pod")
    leader.kill9()  # the lease is not released: the standby waits for it to expire
    killed_with = len(await rig.pods("rc", "worker"))
    assert 1 <= killed_with < WORKERS, f"not killed mid-scale-up: {killed_with} workers"
    slow.remaining = 0

    async def converged() -> dict[str, Any] | None:
        rc: dict[str, Any] = await rig.client.get(RAYCLUSTERS, "rc", ns)
        status = rc.get("status") or {}
        ok = status.get("state") == "ready" and status.get("readyWorkerReplicas") == WORKERS
        return rc if ok else None

    await eventually(converged, "the standby finishing the scale-up", timeout=60)
    new_holder = await holder()
    assert new_holder and new_holder != first_holder
    assert standby.running(), standby.output()
    assert len(await rig.pods("rc", "head")) == 1 and len(await rig.pods("rc", "worker")) == WORKERS
    assert await _pod_writes(rig, "create") == 1 + WORKERS  # no duplicate from the hand-over
    assert await _pod_writes(rig, "delete") == 0 and await _pod_writes(rig, "deletecollection") == 0
