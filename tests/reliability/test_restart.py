"""Operator restart is safe: SIGKILL mid-reconcile, then a new process takes over.

What a controller keeps only in memory (create/delete expectations, timers) dies with it; what it
needs to stay correct across a restart must be recoverable from the API. These tests kill a real
``kuberay-operator run`` process with SIGKILL (no drain, nothing flushed) at the worst moments.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.constants import RAYCLUSTERS, RAYSERVICES
from controllers.rayservice.cluster import DELETION_DEADLINE_ANNOTATION_KEY
from kuberay_py.client import NotFound
from kuberay_py.client.resources import PODS

from .conftest import OperatorFactory, Rig, eventually, rayservice

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_SAMPLE = ROOT / "tests" / "fixtures" / "kuberay" / "samples" / "ray-cluster.sample.yaml"
WORKERS = 8
pytestmark = pytest.mark.builtin_only


def raycluster(name: str, workers: int) -> dict[str, Any]:
    obj: dict[str, Any] = copy.deepcopy(yaml.safe_load(CLUSTER_SAMPLE.read_text()))
    obj["metadata"] = {"name": name}
    group = obj["spec"]["workerGroupSpecs"][0]
    group.update(replicas=workers, minReplicas=0, maxReplicas=workers + 2)
    return obj


def _pod_writes(rig: Rig, verb: str) -> int:
    """Successful Pod ``verb`` requests (the simulator's own status writes are ``pods/status``)."""
    return sum(
        1
        for r in rig.server.request_log.records
        if r.verb == verb and r.resource == "pods" and r.namespace == rig.namespace and r.status < 300
    )


async def test_sigkill_while_creating_workers_then_restart_creates_no_duplicates(
    rig: Rig, operator_processes: OperatorFactory
) -> None:
    ns = rig.namespace
    rig.server.request_log.clear()
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
    assert _pod_writes(rig, "create") == 1 + WORKERS
    # nothing that existed when the first operator died was deleted or replaced
    now = {p["metadata"]["name"]: p["metadata"]["uid"] for p in heads + workers}
    assert at_kill.items() <= now.items()
    assert _pod_writes(rig, "delete") == 0 and _pod_writes(rig, "deletecollection") == 0
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

    svc["spec"]["rayClusterConfig"]["rayVersion"] = "2.60.0"  # a new cluster, then the old one dangles
    await rig.client.update(RAYSERVICES, svc)

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
    # the delete came from the new process, and not before the deadline (the event's own time)
    deletions = [e for e in await rig.events("rs") if e["reason"] == "DeletedRayCluster" and old in e["note"]]
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
