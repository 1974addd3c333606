"""The reconciler against a recording client and a hand-fed cache.

The cache is fed by the test, so it can be made stale on purpose: that is how the expectations
guard against double creates is shown (KubeRay #715), and how "a no-op reconcile sends zero
requests" is counted exactly.
"""

from __future__ import annotations

import copy
from typing import Any, cast

from controllers import constants as C
from controllers.common.scope import Deps
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.reconciler import RayClusterReconciler
from kuberay_py.client import Client, Resource
from kuberay_py.client.resources import PODS, SERVICES
from kuberay_py.clock import FakeClock
from kuberay_py.controller import Expectations, Request, Result
from tests.unit.fakes import Events, FakeCache, RecordingClient
from tests.unit.raycluster.test_pod_builder import cluster as make_cluster


def setup_env(cluster: dict[str, Any]) -> tuple[RayClusterReconciler, FakeCache, RecordingClient, Events]:
    cache, client, events = FakeCache(), RecordingClient(), Events()
    cache.put(C.RAYCLUSTERS, cluster)
    clock = FakeClock()
    deps = Deps(cast(Client, client), cache, events, clock, RayClusterOptions())
    reconciler = RayClusterReconciler(deps, expectations=Expectations(clock=clock))
    return reconciler, cache, client, events


def sync_cache_from_creates(cache: FakeCache, client: RecordingClient, created: list[dict[str, Any]]) -> None:
    for obj in created:
        cache.put(PODS if obj["kind"] == "Pod" else SERVICES, obj)


def running_ready(pod: dict[str, Any], ip: str) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    pod["status"] = {"phase": "Running", "podIP": ip, "conditions": [{"type": "Ready", "status": "True"}]}
    return pod


REQ = Request("ns", "rc")


async def test_first_reconcile_creates_service_head_and_workers_then_noop_sends_nothing() -> None:
    c = make_cluster()
    c["spec"]["workerGroupSpecs"][0]["replicas"] = 3
    reconciler, cache, client, events = setup_env(c)
    created: list[dict[str, Any]] = []
    real_create = client.create

    async def capture(res: Resource, body: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        obj = await real_create(res, body, namespace)
        created.append(obj)
        return obj

    client.create = capture  # type: ignore[method-assign]
    result = await reconciler.reconcile(REQ)
    kinds = [(verb, kind) for verb, kind, _ in client.requests]
    assert kinds.count(("create", "Service")) == 1
    assert kinds.count(("create", "Pod")) == 4
    # No status yet: it would be computed from a cache without the Pods just created.
    assert ("update_status", "RayCluster") not in kinds
    assert result.requeue_after == 300.0
    # Slow start: batches of 1 and 2, one CreatedWorkerPod event naming all their Pods.
    worker_events = [m for _, r, m in events.events if r == "CreatedWorkerPod"]
    assert len(worker_events) == 1
    assert worker_events[0].startswith("Created 3 worker Pods: ns/rc-small-worker-")

    # Stale cache: nothing is visible yet. Expectations stop a second round of creates.
    client.requests.clear()
    await reconciler.reconcile(REQ)
    assert client.requests == []

    # The watch delivers everything (Pods still Pending): one status write, already complete.
    for obj in created:
        if obj["kind"] == "Pod":
            reconciler.expectations.on_add(obj, False)
    sync_cache_from_creates(cache, client, created)
    await reconciler.reconcile(REQ)
    assert [r[0] for r in client.requests] == ["update_status"]
    assert client.last_status["head"]["serviceName"] == "rc-head-svc"
    assert client.last_status["head"]["podName"].startswith("rc-head-")
    assert client.last_status["desiredWorkerReplicas"] == 3
    assert client.last_status["desiredCPU"] == "5500m"  # 1 (head) + 3 × 1500m (limits stand in for requests)
    assert client.last_status["desiredMemory"] == "5Gi"  # 2Gi + 3 × 1Gi
    assert client.last_status["desiredGPU"] == "3"

    # Pods become ready; status reaches `ready`.
    for i, pod in enumerate(cache.list(PODS, "ns")):
        cache.put(PODS, running_ready(pod, f"10.0.0.{i + 1}"))
    cluster_obj = cache.get(C.RAYCLUSTERS, "rc", "ns")
    assert cluster_obj is not None
    cluster_obj["status"] = client.last_status
    client.requests.clear()
    await reconciler.reconcile(REQ)
    assert [r[0] for r in client.requests] == ["update_status"]
    status = client.last_status
    assert status["state"] == "ready"
    assert status["readyWorkerReplicas"] == 3 and status["availableWorkerReplicas"] == 3
    assert status["head"]["podName"].startswith("rc-head-")
    assert status["head"]["serviceIP"] == status["head"]["podIP"]  # headless head Service
    conds = {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}
    assert conds["HeadPodReady"] == ("True", "HeadPodRunningAndReady")
    assert conds["RayClusterProvisioned"] == ("True", "AllPodRunningAndReadyFirstTime")

    # Converged: the next reconcile sends zero requests.
    cluster_obj["status"] = status
    client.requests.clear()
    await reconciler.reconcile(REQ)
    assert client.requests == []


async def test_invalid_spec_warns_sets_reason_and_deletes_nothing() -> None:
    c = make_cluster()
    c["spec"]["workerGroupSpecs"][0]["minReplicas"] = 5  # min > max (3)
    reconciler, cache, client, events = setup_env(c)
    cache.put(
        PODS,
        {
            "metadata": {
                "name": "rc-head-x",
                "namespace": "ns",
                "uid": "p1",
                "labels": {"ray.io/cluster": "rc", "ray.io/node-type": "head"},
            },
            "status": {"phase": "Failed"},
        },
    )
    result = await reconciler.reconcile(REQ)
    assert result.requeue_after is None and not result.requeue
    assert [e[1] for e in events.events] == ["InvalidRayClusterSpec"]
    assert "minReplicas" in client.last_status["reason"]
    assert [r[0] for r in client.requests] == ["update_status"]
    # Same invalid generation again: no event storm, no write.
    c["status"] = client.last_status
    client.requests.clear()
    await reconciler.reconcile(REQ)
    assert client.requests == [] and len(events.events) == 1


async def test_terminal_worker_is_deleted_and_replaced_next_round_but_unready_is_kept() -> None:
    c = make_cluster()
    c["spec"]["workerGroupSpecs"][0]["replicas"] = 2
    reconciler, cache, client, _ = setup_env(c)
    labels = {"ray.io/cluster": "rc", "ray.io/group": "small", "ray.io/node-type": "worker"}
    head_labels = {"ray.io/cluster": "rc", "ray.io/group": "headgroup", "ray.io/node-type": "head"}
    cache.put(PODS, {"metadata": {"name": "h", "namespace": "ns", "uid": "h", "labels": head_labels}})
    cache.put(
        PODS,
        {
            "metadata": {"name": "w1", "namespace": "ns", "uid": "w1", "labels": labels},
            "status": {"phase": "Failed"},
        },
    )
    cache.put(
        PODS,
        {
            "metadata": {"name": "w2", "namespace": "ns", "uid": "w2", "labels": labels},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]},
        },
    )
    cache.put(
        SERVICES, {"metadata": {"name": "rc-head-svc", "namespace": "ns"}, "spec": {"clusterIP": "None"}}
    )
    await reconciler.reconcile(REQ)
    pod_writes = [(v, n) for v, k, n in client.requests if k == "Pod"]
    assert pod_writes == [("delete", "w1")]
    # Deletion observed; the next round replaces it.
    reconciler.expectations.on_delete(cache.get(PODS, "w1", "ns") or {})
    cache.remove(PODS, "ns", "w1")
    client.requests.clear()
    await reconciler.reconcile(REQ)
    assert [(v, k) for v, k, _ in client.requests if k == "Pod"] == [("create", "Pod")]


async def test_autoscaler_surplus_is_not_deleted_but_workers_to_delete_is() -> None:
    c = make_cluster()
    c["spec"]["enableInTreeAutoscaling"] = True
    g = c["spec"]["workerGroupSpecs"][0]
    g["replicas"] = 1
    reconciler, cache, client, _ = setup_env(c)
    client.existing |= {("ServiceAccount", "rc"), ("Role", "rc"), ("RoleBinding", "rc")}
    labels = {"ray.io/cluster": "rc", "ray.io/group": "small", "ray.io/node-type": "worker"}
    cache.put(
        PODS,
        {
            "metadata": {
                "name": "h",
                "namespace": "ns",
                "uid": "h",
                "labels": {"ray.io/cluster": "rc", "ray.io/node-type": "head"},
            }
        },
    )
    for n in ("w1", "w2", "w3"):
        cache.put(PODS, {"metadata": {"name": n, "namespace": "ns", "uid": n, "labels": labels}})
    cache.put(SERVICES, {"metadata": {"name": "rc-head-svc", "namespace": "ns"}, "spec": {}})
    await reconciler.reconcile(REQ)
    assert [r for r in client.requests if r[1] == "Pod"] == []
    g["scaleStrategy"] = {"workersToDelete": ["w2", "gone"]}
    client.requests.clear()
    await reconciler.reconcile(REQ)
    assert [(v, n) for v, k, n in client.requests if k == "Pod"] == [("delete", "w2")]
    # RBAC was checked once and remembered: no GETs on later reconciles.
    assert [r for r in client.requests if r[0] == "get"] == []


async def test_suspend_records_suspending_then_deletes_all_then_suspended() -> None:
    c = make_cluster()
    c["spec"]["suspend"] = True
    reconciler, cache, client, _ = setup_env(c)
    cache.put(
        PODS,
        {
            "metadata": {
                "name": "h",
                "namespace": "ns",
                "uid": "h",
                "labels": {"ray.io/cluster": "rc", "ray.io/node-type": "head"},
            }
        },
    )
    cache.put(SERVICES, {"metadata": {"name": "rc-head-svc", "namespace": "ns"}, "spec": {}})
    result = await reconciler.reconcile(REQ)
    assert result.requeue
    assert [r[0] for r in client.requests] == ["update_status"]
    c["status"] = client.last_status
    client.requests.clear()
    await reconciler.reconcile(REQ)
    assert ("deletecollection", "Pod", "ray.io/cluster=rc") in client.requests
    reconciler.expectations.on_delete(cache.get(PODS, "h", "ns") or {})
    cache.remove(PODS, "ns", "h")
    client.requests.clear()
    await reconciler.reconcile(REQ)
    status = client.last_status
    conds = {c["type"]: c["status"] for c in status["conditions"]}
    assert conds["RayClusterSuspended"] == "True" and conds["RayClusterSuspending"] == "False"
    assert status["state"] == "suspended"


async def test_counter_only_changes_are_coalesced_and_stale_cache_sees_our_write() -> None:
    c = make_cluster()
    c["metadata"]["resourceVersion"] = "1"
    c["spec"]["workerGroupSpecs"][0]["replicas"] = 2
    reconciler, cache, client, _ = setup_env(c)
    labels = {"ray.io/cluster": "rc", "ray.io/group": "small", "ray.io/node-type": "worker"}
    head = {
        "metadata": {
            "name": "h",
            "namespace": "ns",
            "uid": "h",
            "labels": {"ray.io/cluster": "rc", "ray.io/node-type": "head"},
        }
    }
    cache.put(PODS, running_ready(head, "10.0.0.1"))
    cache.put(PODS, {"metadata": {"name": "w1", "namespace": "ns", "uid": "w1", "labels": labels}})
    cache.put(PODS, {"metadata": {"name": "w2", "namespace": "ns", "uid": "w2", "labels": labels}})
    cache.put(
        SERVICES, {"metadata": {"name": "rc-head-svc", "namespace": "ns"}, "spec": {"clusterIP": "None"}}
    )

    async def update_status(res: Resource, body: dict[str, Any]) -> dict[str, Any]:
        client.requests.append(("update_status", res.kind, body["metadata"]["name"]))
        client.last_status = body["status"]
        out = copy.deepcopy(body)
        out["metadata"]["resourceVersion"] = str(int(body["metadata"]["resourceVersion"]) + 1)
        return out

    client.update_status = update_status  # type: ignore[method-assign]
    await reconciler.reconcile(REQ)
    assert [r[0] for r in client.requests] == ["update_status"]
    # The cache still holds resourceVersion 1: the reconciler uses its own write, sends nothing.
    client.requests.clear()
    await reconciler.reconcile(REQ)
    assert client.requests == []
    # One worker turns Ready: a counter-only change waits for the coalescing window.
    cache.put(PODS, running_ready(cache.get(PODS, "w1", "ns") or {}, "10.0.0.2"))
    result = await reconciler.reconcile(REQ)
    assert client.requests == [] and result.requeue_after == 5.0
    clock = reconciler.deps.clock
    assert isinstance(clock, FakeClock)
    await clock.advance(5.0)
    await reconciler.reconcile(REQ)
    assert [r[0] for r in client.requests] == ["update_status"]
    assert client.last_status["readyWorkerReplicas"] == 1
    # The last worker makes the cluster ready: a state change is written at once.
    cache.put(PODS, running_ready(cache.get(PODS, "w2", "ns") or {}, "10.0.0.3"))
    client.requests.clear()
    await reconciler.reconcile(REQ)
    assert [r[0] for r in client.requests] == ["update_status"]
    assert client.last_status["state"] == "ready"


async def test_deleted_cluster_leaves_no_per_cluster_memory() -> None:
    c = make_cluster()
    c["spec"]["enableInTreeAutoscaling"] = True
    reconciler, cache, client, _ = setup_env(c)
    await reconciler.reconcile(REQ)
    assert "ns/rc" in reconciler.memory.memos and not reconciler.expectations.satisfied("ns/rc")
    client.requests.clear()
    await reconciler.reconcile(REQ)
    assert ("get", "Role", "rc") not in client.requests  # remembered: no GET while it lives
    cache.remove(C.RAYCLUSTERS, "ns", "rc")
    client.requests.clear()
    assert await reconciler.reconcile(REQ) == Result()
    assert client.requests == []
    assert "ns/rc" not in reconciler.memory.memos and len(reconciler.memory.memos) == 0
    assert reconciler.expectations.satisfied("ns/rc")
    # A cluster of the same name created again is checked afresh: nothing was remembered.
    cache.put(C.RAYCLUSTERS, make_cluster() | {"spec": c["spec"]})
    await reconciler.reconcile(REQ)
    assert ("get", "Role", "rc") in client.requests
