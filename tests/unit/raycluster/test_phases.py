"""Each RayCluster phase function on an explicit ClusterContext over fakes.

No reconciler is built: a test makes a context (the cluster, its cached Pods, a memo), calls one
phase and reads what it sent, the events, the expectations and the memo.
"""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any, cast

import pytest

from controllers import constants as C
from controllers.api.validation import validate_raycluster
from controllers.common.last_write import latest
from controllers.common.scope import Deps
from controllers.raycluster import children, deletion, pods, status_write
from controllers.raycluster.context import ClusterContext
from controllers.raycluster.memory import Memory
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.pods import ReplicaFailure
from controllers.raycluster.redis_cleanup import redis_cleanup_job_name
from kuberay_py.client import Client, Conflict, Forbidden
from kuberay_py.client.resources import JOBS, SERVICES
from kuberay_py.clock import FakeClock, format_rfc3339
from kuberay_py.controller import Expectations
from kuberay_py.objects import Obj
from tests.unit.fakes import Events, FakeCache, RecordingClient
from tests.unit.raycluster.test_pod_builder import cluster as make_cluster


class Kit:
    def __init__(self, cluster: Obj, pods: list[Obj] | None = None, **options: Any) -> None:
        self.cache, self.client, self.events, self.clock = (
            FakeCache(),
            RecordingClient(),
            Events(),
            FakeClock(),
        )
        self.expectations = Expectations(clock=self.clock)
        self.memory = Memory(self.expectations)
        self.options = RayClusterOptions(**options)
        self.cluster, self.pods = cluster, pods or []

    @property
    def ctx(self) -> ClusterContext:
        """A context for the next phase call (the memo persists across calls, as across reconciles)."""
        return ClusterContext(
            Deps(cast(Client, self.client), self.cache, self.events, self.clock, self.options),
            self.expectations,
            self.memory.memos.get("ns/rc", self.cluster["metadata"]["uid"]),
            self.cluster,
            self.pods,
        )

    def verbs(self) -> list[tuple[str, str]]:
        return [(verb, kind) for verb, kind, _ in self.client.requests]


def pod(name: str, node_type: str, group: str = "small", **status: Any) -> Obj:
    labels = {
        C.RAY_CLUSTER_LABEL_KEY: "rc",
        C.RAY_NODE_TYPE_LABEL_KEY: node_type,
        C.RAY_NODE_GROUP_LABEL_KEY: group,
    }
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": labels},
        "spec": {"containers": [{"name": "ray"}]},
        "status": status or {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


# -- children ------------------------------------------------------------------------------------


async def test_the_head_service_is_created_once_and_served_until_the_cache_shows_it() -> None:
    kit = Kit(make_cluster())
    await children.reconcile_children(kit.ctx)
    assert kit.verbs() == [("create", "Service")]
    assert kit.events.reasons() == [C.EVENT_CREATED_SERVICE]
    assert children.service(kit.ctx, "rc-head-svc") is not None  # our create, before the watch
    await children.reconcile_children(kit.ctx)
    assert kit.verbs() == [("create", "Service")]  # not created twice while the cache lags
    kit.cache.put(SERVICES, kit.client.stored[("Service", "rc-head-svc")])
    await children.reconcile_children(kit.ctx)
    assert kit.verbs() == [("create", "Service")]


async def test_autoscaler_rbac_is_checked_once_then_remembered() -> None:
    cluster = make_cluster()
    cluster["spec"]["enableInTreeAutoscaling"] = True
    kit = Kit(cluster)
    kit.cache.put(SERVICES, {"metadata": {"name": "rc-head-svc", "namespace": "ns"}})
    await children.reconcile_children(kit.ctx)
    assert kit.verbs() == [
        ("get", "ServiceAccount"),
        ("create", "ServiceAccount"),
        ("get", "Role"),
        ("create", "Role"),
        ("get", "RoleBinding"),
        ("create", "RoleBinding"),
    ]
    kit.client.requests.clear()
    await children.reconcile_children(kit.ctx)
    assert kit.client.requests == []
    kit.memory.forget("ns/rc")
    await children.reconcile_children(kit.ctx)
    assert ("get", "Role") in kit.verbs()


async def test_a_missing_user_service_account_is_a_warning_and_an_error() -> None:
    cluster = make_cluster()
    cluster["spec"]["enableInTreeAutoscaling"] = True
    cluster["spec"]["headGroupSpec"]["template"]["spec"]["serviceAccountName"] = "mine"
    kit = Kit(cluster)
    with pytest.raises(Exception, match="not found"):
        await children.reconcile_children(kit.ctx)
    assert kit.events.reasons() == [C.EVENT_AUTOSCALER_SERVICE_ACCOUNT_NOT_FOUND]


async def test_a_failed_create_is_a_warning_naming_the_api_answer() -> None:
    kit = Kit(make_cluster())
    kit.client.fail[("create", "Service")] = Forbidden(403, "Forbidden", "quota")
    with pytest.raises(Forbidden):
        await children.reconcile_children(kit.ctx)
    [(type_, reason, message)] = kit.events.events
    assert (type_, reason) == ("Warning", C.EVENT_FAILED_TO_CREATE_SERVICE)
    assert "ns/rc-head-svc" in message and "quota" in message


async def test_an_owned_ingress_is_brought_back_once_per_generation() -> None:
    cluster = make_cluster()
    cluster["spec"]["headGroupSpec"]["enableIngress"] = True
    kit = Kit(cluster)
    kit.cache.put(SERVICES, {"metadata": {"name": "rc-head-svc", "namespace": "ns"}})
    await children.reconcile_children(kit.ctx)
    assert kit.verbs() == [("get", "Ingress"), ("create", "Ingress")]
    name = kit.client.requests[-1][2]
    drifted = copy.deepcopy(kit.client.stored[("Ingress", name)])
    drifted["metadata"]["ownerReferences"] = [{"uid": "uid-1", "controller": True}]
    drifted["spec"]["rules"] = []
    kit.client.stored[("Ingress", name)] = drifted
    kit.client.requests.clear()
    await children.reconcile_children(kit.ctx)
    assert kit.client.requests == []  # same generation: no drift check
    cluster["metadata"]["generation"] = 2
    await children.reconcile_children(kit.ctx)
    assert kit.verbs() == [("get", "Ingress"), ("update", "Ingress")]
    assert kit.client.stored[("Ingress", name)]["spec"]["rules"]
    assert kit.events.reasons()[-1] == C.EVENT_UPDATED_INGRESS


# -- pods ----------------------------------------------------------------------------------------


async def test_a_new_cluster_gets_a_head_and_workers_in_slow_start_batches() -> None:
    cluster = make_cluster()
    cluster["spec"]["workerGroupSpecs"][0]["replicas"] = 3
    kit = Kit(cluster)
    await pods.reconcile_pods(kit.ctx)
    assert kit.verbs() == [("create", "Pod")] * 4
    # One event per scale-up round names every worker Pod of it.
    assert kit.events.reasons() == [C.EVENT_CREATED_HEAD_POD, C.EVENT_CREATED_WORKER_POD]
    assert kit.expectations.pending("ns/rc")["creates"] == 4
    kit.client.requests.clear()
    await pods.reconcile_pods(kit.ctx)  # the cache has not shown them yet: wait, create nothing
    assert kit.client.requests == []


async def test_a_failed_pod_create_is_a_replica_failure_with_its_reason() -> None:
    kit = Kit(make_cluster(), [pod("h", C.NODE_TYPE_HEAD)])
    kit.client.fail[("create", "Pod")] = Forbidden(403, "Forbidden", "exceeded quota")
    with pytest.raises(ReplicaFailure) as failure:
        await pods.reconcile_pods(kit.ctx)
    assert (
        failure.value.reason == C.REASON_FAILED_CREATE_WORKER_POD
        and "exceeded quota" in failure.value.message
    )
    assert kit.events.reasons() == [C.EVENT_FAILED_TO_CREATE_WORKER_POD]
    assert kit.expectations.satisfied("ns/rc")  # nothing was created, nothing to wait for


async def test_a_terminal_head_is_deleted_and_expected_gone() -> None:
    kit = Kit(make_cluster(), [pod("h", C.NODE_TYPE_HEAD, phase="Failed"), pod("w", C.NODE_TYPE_WORKER)])
    await pods.reconcile_pods(kit.ctx)
    assert kit.client.requests == [("delete", "Pod", "h")]
    assert kit.events.reasons() == [C.EVENT_DELETED_HEAD_POD]
    assert kit.expectations.pending("ns/rc")["deletes"] == 1


async def test_suspending_deletes_every_live_pod_at_once() -> None:
    cluster = make_cluster()
    cluster["spec"]["suspend"] = True
    cluster["status"] = {"conditions": [{"type": C.COND_RAYCLUSTER_SUSPENDING, "status": "True"}]}
    gone = pod("old", C.NODE_TYPE_WORKER)
    gone["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    kit = Kit(cluster, [pod("h", C.NODE_TYPE_HEAD), pod("w", C.NODE_TYPE_WORKER), gone])
    await pods.reconcile_pods(kit.ctx)
    assert kit.client.requests == [("deletecollection", "Pod", f"{C.RAY_CLUSTER_LABEL_KEY}=rc")]
    assert kit.expectations.pending("ns/rc")["deletes"] == 2  # the terminating one is not waited for


# -- deletion ------------------------------------------------------------------------------------


def redis_cluster(seconds_since_deletion: float, clock: FakeClock) -> Obj:
    cluster = make_cluster()
    cluster["spec"]["gcsFaultToleranceOptions"] = {"redisAddress": "redis:6379"}
    cluster["metadata"]["finalizers"] = [C.GCS_FT_REDIS_CLEANUP_FINALIZER]
    deleted = clock.utcnow() - timedelta(seconds=seconds_since_deletion)
    cluster["metadata"]["deletionTimestamp"] = format_rfc3339(deleted)
    return cluster


async def finalize(kit: Kit) -> float | None:
    """One deletion step; the requeue delay it asked for (None: nothing left to wait for)."""
    ctx = kit.ctx
    await deletion.finalize(ctx)
    return ctx.requeue.delay


async def test_redis_cleanup_waits_for_the_pods_then_runs_a_job_then_releases_the_cluster() -> None:
    clock = FakeClock()
    kit = Kit(redis_cluster(5, clock), [pod("h", C.NODE_TYPE_HEAD)])
    kit.clock = clock
    assert deletion.needs_finalizer(kit.cluster, kit.options)
    assert await finalize(kit) == kit.options.redis_cleanup_poll
    assert kit.verbs() == [("deletecollection", "Pod")]  # the head goes first

    kit.pods = []
    kit.client.requests.clear()
    assert await finalize(kit) == kit.options.redis_cleanup_poll
    job = redis_cleanup_job_name(kit.cluster)
    assert kit.client.requests == [("get", "Job", job), ("create", "Job", job)]
    assert kit.events.reasons() == [C.EVENT_CREATED_REDIS_CLEANUP_JOB]

    kit.client.stored[(JOBS.kind, job)]["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
    kit.client.requests.clear()
    assert await finalize(kit) is None
    assert kit.verbs() == [("get", "Job"), ("update", "RayCluster")]
    assert not kit.client.stored[("RayCluster", "rc")]["metadata"].get("finalizers")


async def test_a_stuck_redis_cleanup_is_abandoned_after_the_timeout_with_a_warning() -> None:
    clock = FakeClock()
    kit = Kit(redis_cluster(301, clock), [pod("h", C.NODE_TYPE_HEAD)])
    kit.clock = clock
    assert await finalize(kit) is None
    assert kit.verbs() == [("update", "RayCluster")]
    assert kit.events.reasons() == [C.EVENT_FORCE_DELETED_STUCK_CLUSTER]


async def test_an_embedded_gcs_cluster_drops_a_leftover_redis_finalizer_at_once() -> None:
    """A finalizer added under an earlier Redis spec: no Redis to clean, no Pods awaited (KubeRay)."""
    clock = FakeClock()
    cluster = redis_cluster(5, clock)
    cluster["spec"]["gcsFaultToleranceOptions"] = {"backend": "rocksdb"}
    kit = Kit(cluster, [pod("h", C.NODE_TYPE_HEAD)])
    kit.clock = clock
    assert not deletion.needs_finalizer(kit.cluster, kit.options)
    assert await finalize(kit) is None
    assert kit.verbs() == [("update", "RayCluster")]
    assert not kit.client.stored[("RayCluster", "rc")]["metadata"].get("finalizers")


# -- status --------------------------------------------------------------------------------------


async def test_a_counter_only_change_is_held_back_for_the_window_a_state_change_is_not() -> None:
    cluster = make_cluster()
    cluster["status"] = {"state": "ready", "readyWorkerReplicas": 1, "observedGeneration": 1}
    kit = Kit(cluster)
    counters = {**cluster["status"], "readyWorkerReplicas": 2}
    assert status_write.coalesce_delay(kit.ctx, counters, urgent=False) == 5.0
    kit.clock.now_value = None
    assert (
        status_write.coalesce_delay(kit.ctx, {**cluster["status"], "state": "suspended"}, urgent=False)
        is None
    )
    assert status_write.coalesce_delay(kit.ctx, counters, urgent=True) is None


async def test_our_write_is_read_until_the_cache_moves_past_it() -> None:
    cluster = make_cluster(resourceVersion="5")
    kit = Kit(cluster)
    ctx = kit.ctx
    await status_write.write_status(ctx, {"state": "ready", "observedGeneration": 1})
    written = latest(ctx.memo, cluster)
    assert written["status"]["state"] == "ready" and written is not cluster
    moved = make_cluster(resourceVersion="9")
    assert latest(ctx.memo, moved) is moved
    assert latest(ctx.memo, cluster) is cluster  # forgotten once the cache moved on


async def test_a_conflicting_status_write_forgets_our_write_and_raises() -> None:
    kit = Kit(make_cluster(resourceVersion="5"))
    ctx = kit.ctx
    ctx.memo.written = ("5", make_cluster())
    kit.client.fail[("update_status", "RayCluster")] = Conflict(409, "Conflict", "stale")
    with pytest.raises(Conflict):
        await status_write.write_status(ctx, {"state": "ready"})
    assert ctx.memo.written is None


async def test_an_invalid_spec_is_reported_once_per_generation() -> None:
    cluster = make_cluster()
    kit = Kit(cluster)
    cluster["spec"]["workerGroupSpecs"][0]["minReplicas"] = 5
    errors = validate_raycluster(cluster)
    assert errors
    await status_write.report_invalid(kit.ctx, errors)
    assert kit.events.reasons() == [C.EVENT_INVALID_RAYCLUSTER_SPEC]
    # KubeRay writes no status here; ours adds the reason but does not claim the generation observed.
    assert set(kit.client.last_status) == {"reason", "lastUpdateTime"}
    cluster["status"] = kit.client.last_status
    await status_write.report_invalid(kit.ctx, errors)
    assert kit.events.reasons() == [C.EVENT_INVALID_RAYCLUSTER_SPEC]  # same message and generation
    cluster["metadata"]["generation"] = 2
    await status_write.report_invalid(kit.ctx, errors)
    assert kit.events.reasons() == [C.EVENT_INVALID_RAYCLUSTER_SPEC] * 2  # a new generation, reported again


def test_becoming_suspending_is_seen_once() -> None:
    cluster = make_cluster()
    suspending = {"conditions": [{"type": C.COND_RAYCLUSTER_SUSPENDING, "status": "True"}]}
    assert status_write.became_suspending(cluster, suspending)
    cluster["status"] = suspending
    assert not status_write.became_suspending(cluster, suspending)
