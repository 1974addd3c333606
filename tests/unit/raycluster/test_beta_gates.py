"""KubeRay v1.7.0's two beta gates, on (the default) and off.

RayClusterStatusConditions off: the status gets no condition (state ``suspended`` from
``spec.suspend`` with no Pod left) and a suspend deletes every Pod in the round it is seen.
RayMultiHostIndexing off: worker Pods carry no replica index/name or host index labels, and a
multi-host group is reconciled Pod by Pod.
"""

from __future__ import annotations

from typing import Any

from controllers import constants as C
from controllers.api.gates import ClusterGates
from controllers.raycluster import pods
from controllers.raycluster.scaling import plan_group
from controllers.raycluster.services import build_head_service
from controllers.raycluster.status import compute_status
from kuberay_py.objects import Obj
from tests.unit.raycluster.test_phases import Kit, pod
from tests.unit.raycluster.test_pod_builder import cluster as make_cluster

NOW = "2026-01-01T00:00:00Z"
MULTI_HOST_LABELS = {
    C.RAY_WORKER_REPLICA_INDEX_LABEL_KEY,
    C.RAY_WORKER_REPLICA_NAME_LABEL_KEY,
    C.RAY_HOST_INDEX_LABEL_KEY,
}
CONDITIONS_OFF = ClusterGates(status_conditions=False)
INDEXING_OFF = ClusterGates(multi_host_indexing=False)


def test_both_beta_gates_default_on_as_in_kuberay() -> None:
    assert ClusterGates().status_conditions and ClusterGates().multi_host_indexing
    gates = ClusterGates.from_feature_gates({})
    assert gates.status_conditions and gates.multi_host_indexing
    off = ClusterGates.from_feature_gates(
        {"RayClusterStatusConditions": False, "RayMultiHostIndexing": False}
    )
    assert not off.status_conditions and not off.multi_host_indexing


# -- RayClusterStatusConditions ------------------------------------------------------------------


def ready_cluster() -> tuple[Obj, list[Obj]]:
    cluster = make_cluster()
    group = cluster["spec"]["workerGroupSpecs"][0]
    group["replicas"] = 1
    return cluster, [pod("h", C.NODE_TYPE_HEAD), pod("w", C.NODE_TYPE_WORKER)]


def test_a_ready_cluster_has_conditions_only_with_the_gate_on() -> None:
    cluster, live = ready_cluster()
    on = compute_status(cluster, live, build_head_service(cluster), now=NOW)
    assert {c["type"] for c in on["conditions"]} == {
        C.COND_HEAD_POD_READY,
        C.COND_RAYCLUSTER_PROVISIONED,
        C.COND_RAYCLUSTER_SUSPENDED,
        C.COND_RAYCLUSTER_SUSPENDING,
    }
    off = compute_status(cluster, live, build_head_service(cluster), now=NOW, with_conditions=False)
    assert "conditions" not in off  # omitempty, as KubeRay writes it
    assert off["state"] == on["state"] == C.STATE_READY
    assert off["readyWorkerReplicas"] == 1 and off["head"]["podName"] == "h"


def test_gate_off_a_replica_failure_is_no_condition_and_old_conditions_are_left_alone() -> None:
    cluster, live = ready_cluster()
    kept = {"type": C.COND_HEAD_POD_READY, "status": "True", "reason": "x", "message": ""}
    cluster["status"] = {"conditions": [kept]}

    def failed(gate: bool) -> dict[str, Any]:
        failure = ("FailedCreateWorkerPod", "quota")
        return compute_status(
            cluster, live, None, now=NOW, replica_failure=failure, reconcile_failed=True, with_conditions=gate
        )

    assert failed(False)["conditions"] == [kept]
    on = failed(True)
    assert any(c["type"] == C.COND_REPLICA_FAILURE for c in on["conditions"])


def test_gate_off_suspended_is_spec_suspend_with_no_pod_left() -> None:
    cluster, live = ready_cluster()
    cluster["spec"]["suspend"] = True
    cluster["status"] = {"state": C.STATE_READY}
    assert compute_status(cluster, live, None, now=NOW, with_conditions=False)["state"] == C.STATE_READY
    gone = compute_status(cluster, [], None, now=NOW, with_conditions=False)
    assert gone["state"] == C.STATE_SUSPENDED and "conditions" not in gone
    # Gate on, the same Pods-gone picture is only "suspended" after RayClusterSuspending was recorded.
    assert compute_status(cluster, [], None, now=NOW)["state"] == C.STATE_READY


async def test_gate_off_a_suspend_deletes_the_pods_in_the_round_it_is_seen() -> None:
    cluster, live = ready_cluster()
    cluster["spec"]["suspend"] = True
    off = Kit(cluster, live, gates=CONDITIONS_OFF)
    await pods.reconcile_pods(off.ctx)
    assert off.client.requests == [("deletecollection", "Pod", f"{C.RAY_CLUSTER_LABEL_KEY}=rc")]
    on = Kit(cluster, live)
    await pods.reconcile_pods(on.ctx)
    assert on.client.requests == []  # the status records RayClusterSuspending first


async def test_gate_off_a_resumed_cluster_gets_its_pods_back() -> None:
    cluster, _ = ready_cluster()
    cluster["status"] = {"state": C.STATE_SUSPENDED}
    kit = Kit(cluster, [], gates=CONDITIONS_OFF)
    await pods.reconcile_pods(kit.ctx)
    assert kit.verbs() == [("create", "Pod")] * 2


# -- RayMultiHostIndexing ------------------------------------------------------------------------


def created_labels(kit: Kit) -> list[dict[str, str]]:
    return [
        obj["metadata"]["labels"]
        for (kind, _), obj in kit.client.stored.items()
        if kind == "Pod" and obj["metadata"]["labels"].get(C.RAY_NODE_TYPE_LABEL_KEY) == C.NODE_TYPE_WORKER
    ]


async def test_worker_pods_carry_the_indexing_labels_only_with_the_gate_on() -> None:
    cluster = make_cluster()
    group = cluster["spec"]["workerGroupSpecs"][0]
    group["replicas"], group["numOfHosts"] = 2, 2
    head = pod("h", C.NODE_TYPE_HEAD)
    on = Kit(cluster, [head])
    await pods.reconcile_pods(on.ctx)
    labels_on = created_labels(on)
    assert len(labels_on) == 4 and all(MULTI_HOST_LABELS <= set(labels) for labels in labels_on)
    off = Kit(cluster, [head], gates=INDEXING_OFF)
    await pods.reconcile_pods(off.ctx)
    labels_off = created_labels(off)
    assert len(labels_off) == 4 and all(not MULTI_HOST_LABELS & set(labels) for labels in labels_off)


async def test_gate_off_a_single_host_worker_has_no_replica_index() -> None:
    cluster = make_cluster()
    cluster["spec"]["workerGroupSpecs"][0]["replicas"] = 1
    on = Kit(cluster, [pod("h", C.NODE_TYPE_HEAD)])
    await pods.reconcile_pods(on.ctx)
    assert created_labels(on)[0][C.RAY_WORKER_REPLICA_INDEX_LABEL_KEY] == "0"
    off = Kit(cluster, [pod("h", C.NODE_TYPE_HEAD)], gates=INDEXING_OFF)
    await pods.reconcile_pods(off.ctx)
    assert C.RAY_WORKER_REPLICA_INDEX_LABEL_KEY not in created_labels(off)[0]


def multi_host(name: str, replica: str, phase: str = "Running") -> Obj:
    worker = pod(name, C.NODE_TYPE_WORKER, phase=phase)
    worker["metadata"]["labels"][C.RAY_WORKER_REPLICA_NAME_LABEL_KEY] = replica
    return worker


def names(plan_pods: list[dict[str, Any]]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in plan_pods)


def test_gate_off_a_multi_host_group_is_planned_pod_by_pod() -> None:
    cluster = make_cluster()
    group = cluster["spec"]["workerGroupSpecs"][0]
    group["replicas"], group["numOfHosts"] = 2, 2
    # One replica whole, one lost a host, one host failed: gate on deletes whole replica groups.
    workers = [multi_host("a0", "a"), multi_host("a1", "a", "Failed"), multi_host("b0", "b")]
    on = plan_group(cluster, group, workers, random_delete=False)
    assert names(on.delete) == ["a0", "a1", "b0"]
    off = plan_group(cluster, group, workers, random_delete=False, multi_host_indexing=False)
    assert names(off.delete) == ["a1"] and off.create_replicas == 0
    healthy = [multi_host("a0", "a"), multi_host("b0", "b")]
    assert (
        plan_group(cluster, group, healthy, random_delete=False, multi_host_indexing=False).create_replicas
        == 2
    )
    # workersToDelete names one Pod: gate off it goes alone, not with its replica group.
    group["scaleStrategy"] = {"workersToDelete": ["a0"]}
    full = [multi_host("a0", "a"), multi_host("a1", "a"), multi_host("b0", "b"), multi_host("b1", "b")]
    assert names(plan_group(cluster, group, full, random_delete=False).delete) == ["a0", "a1"]
    plan = plan_group(cluster, group, full, random_delete=False, multi_host_indexing=False)
    assert names(plan.delete) == ["a0"] and plan.create_replicas == 1


def test_gate_off_scale_down_removes_single_pods() -> None:
    cluster = make_cluster()
    group = cluster["spec"]["workerGroupSpecs"][0]
    group["replicas"], group["numOfHosts"] = 1, 2
    full = [multi_host("a0", "a"), multi_host("a1", "a"), multi_host("b0", "b")]
    plan = plan_group(cluster, group, full, random_delete=False, multi_host_indexing=False)
    assert len(plan.delete) == 1
