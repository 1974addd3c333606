"""The per-group plan: terminal Pods only, workersToDelete, autoscaler, multi-host atomicity."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.scaling import plan_group, should_delete_pod
from tests.unit.raycluster.test_pod_builder import cluster


def pod(
    name: str,
    phase: str = "Running",
    *,
    replica: str | None = None,
    restart: str | None = None,
    ray_terminated: bool = False,
    deleting: bool = False,
) -> dict[str, Any]:
    labels = {"ray.io/group": "small"}
    if replica:
        labels["ray.io/worker-group-replica-name"] = replica
    spec: dict[str, Any] = {"containers": [{"name": "ray-worker"}]}
    if restart:
        spec["restartPolicy"] = restart
    status: dict[str, Any] = {"phase": phase}
    if ray_terminated:
        status["containerStatuses"] = [{"name": "ray-worker", "state": {"terminated": {"exitCode": 1}}}]
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "spec": spec, "status": status}


@pytest.mark.parametrize(
    ("p", "expected"),
    [
        (pod("a", "Failed"), True),
        (pod("a", "Succeeded"), True),
        (pod("a", "Running"), False),
        (pod("a", "Pending"), False),
        (pod("a", "Running", restart="Never", ray_terminated=True), True),
        (pod("a", "Running", restart="Always", ray_terminated=True), False),  # kubelet restarts it
        (pod("a", "Running", ray_terminated=True), False),  # restartPolicy defaults to Always
    ],
)
def test_should_delete_only_terminal_pods(p: dict[str, Any], expected: bool) -> None:
    assert should_delete_pod(p)[0] is expected


def test_unready_pods_are_never_deleted_and_nothing_created_after_terminal_deletes() -> None:
    c = cluster()
    g = c["spec"]["workerGroupSpecs"][0]
    g["replicas"] = 3
    plan = plan_group(c, g, [pod("a", "Failed"), pod("b", "Pending")], random_delete=False)
    assert [p["metadata"]["name"] for p in plan.delete] == ["a"]
    assert plan.create_replicas == 0  # KubeRay: no creates in the round that removed unhealthy Pods
    plan = plan_group(c, g, [pod("b", "Pending")], random_delete=False)
    assert plan.delete == [] and plan.create_replicas == 2


def test_clamped_to_max_and_min() -> None:
    c = cluster()
    g = c["spec"]["workerGroupSpecs"][0]
    g.update(replicas=10, minReplicas=1, maxReplicas=3)
    assert plan_group(c, g, [], random_delete=False).create_replicas == 3
    g.update(replicas=0)
    assert plan_group(c, g, [], random_delete=False).create_replicas == 1
    del g["replicas"]  # replicas defaults to minReplicas
    assert plan_group(c, g, [], random_delete=False).create_replicas == 1


def test_scale_down_without_autoscaler_and_random_delete_flag() -> None:
    c = cluster()
    g = c["spec"]["workerGroupSpecs"][0]
    g["replicas"] = 1
    pods = [pod("a"), pod("b"), pod("c")]
    assert len(plan_group(c, g, pods, random_delete=False).delete) == 2
    c["spec"]["enableInTreeAutoscaling"] = True
    plan = plan_group(c, g, pods, random_delete=False)
    assert plan.delete == [] and plan.surplus_kept == 2
    assert len(plan_group(c, g, pods, random_delete=True).delete) == 2


def test_workers_to_delete_honoured_regardless_of_replicas() -> None:
    c = cluster()
    g = c["spec"]["workerGroupSpecs"][0]
    g["replicas"] = 3
    g["scaleStrategy"] = {"workersToDelete": ["b", "not-there"]}
    plan = plan_group(c, g, [pod("a"), pod("b"), pod("c")], random_delete=False)
    assert [p["metadata"]["name"] for p in plan.delete] == ["b"]
    assert plan.create_replicas == 1


def test_multi_host_groups_are_atomic() -> None:
    c = cluster()
    g = c["spec"]["workerGroupSpecs"][0]
    g.update(replicas=2, numOfHosts=2)
    full = [pod("a0", replica="r1"), pod("a1", replica="r1")]
    partial = [pod("b0", replica="r2")]
    plan = plan_group(c, g, full + partial, random_delete=False)
    assert [p["metadata"]["name"] for p in plan.delete] == ["b0"]
    # One host failing takes its replica group along.
    plan = plan_group(c, g, [pod("a0", "Failed", replica="r1"), pod("a1", replica="r1")], random_delete=False)
    assert sorted(p["metadata"]["name"] for p in plan.delete) == ["a0", "a1"]
    # workersToDelete on one host deletes the group; then one replica group is missing.
    g["scaleStrategy"] = {"workersToDelete": ["a1"]}
    two = [*full, pod("c0", replica="r3"), pod("c1", replica="r3")]
    plan = plan_group(c, g, two, random_delete=False)
    assert sorted(p["metadata"]["name"] for p in plan.delete) == ["a0", "a1"]
    assert plan.create_replicas == 1


def names(plan_delete: list[dict[str, Any]]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in plan_delete)


def test_terminating_pods_count_until_gone() -> None:
    """KubeRay lists worker Pods without looking at deletionTimestamp (TestRayClusterSingleHostMultiSlice)."""
    c = cluster()
    g = c["spec"]["workerGroupSpecs"][0]
    g["replicas"] = 3
    pods = [pod("a"), pod("b", deleting=True), pod("c")]
    plan = plan_group(c, g, pods, random_delete=False)
    assert plan.delete == [] and plan.create_replicas == 0
    # Never deleted twice, even when terminal.
    plan = plan_group(c, g, [pod("a"), pod("b", "Failed", deleting=True), pod("c")], random_delete=False)
    assert plan.delete == [] and plan.create_replicas == 0
    # Scale-down takes the leaving Pod first: it costs no request and keeps the live ones.
    g["replicas"] = 2
    assert plan_group(c, g, pods, random_delete=False).delete == []
    g["replicas"] = 1
    assert len(plan_group(c, g, pods, random_delete=False).delete) == 1
    c["spec"]["enableInTreeAutoscaling"] = True
    assert plan_group(c, g, pods, random_delete=False).surplus_kept == 1
    # A workersToDelete entry naming it stops it counting (the autoscaler already lowered replicas).
    g.update(replicas=3, scaleStrategy={"workersToDelete": ["b"]})
    plan = plan_group(c, g, pods, random_delete=False)
    assert plan.delete == [] and plan.create_replicas == 1


def test_multi_host_group_with_a_leaving_host() -> None:
    """One host deleted by hand: the others go too, and nothing is created while any is left."""
    c = cluster()
    g = c["spec"]["workerGroupSpecs"][0]
    g.update(replicas=2, numOfHosts=2)
    full = [pod("a0", replica="r1"), pod("a1", replica="r1")]
    plan = plan_group(
        c, g, [*full, pod("b0", replica="r2"), pod("b1", replica="r2", deleting=True)], random_delete=False
    )
    assert names(plan.delete) == ["b0"] and plan.create_replicas == 0
    both = [pod("b0", replica="r2", deleting=True), pod("b1", replica="r2", deleting=True)]
    plan = plan_group(c, g, [*full, *both], random_delete=False)
    assert plan.delete == [] and plan.create_replicas == 0
    plan = plan_group(c, g, [*full, both[0]], random_delete=False)
    assert plan.delete == [] and plan.create_replicas == 0
    plan = plan_group(c, g, full, random_delete=False)
    assert plan.delete == [] and plan.create_replicas == 1


def test_suspended_group_deletes_everything() -> None:
    c = cluster()
    g = c["spec"]["workerGroupSpecs"][0]
    g["suspend"] = True
    plan = plan_group(c, g, [pod("a"), pod("b"), pod("c", deleting=True)], random_delete=False)
    assert names(plan.delete) == ["a", "b"] and plan.create_replicas == 0


def test_options_from_env() -> None:
    opts = RayClusterOptions.from_env(
        {
            "ENABLE_PROBES_INJECTION": "false",
            "RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV": "10",
            "CLUSTER_DOMAIN": "x.y",
        }
    )
    assert not opts.enable_probes_injection and opts.resync_period == 10.0 and opts.cluster_domain == "x.y"
    assert RayClusterOptions.from_env({}).enable_probes_injection
    with pytest.raises(ValueError, match="RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV"):
        RayClusterOptions.from_env({"RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV": "soon"})
