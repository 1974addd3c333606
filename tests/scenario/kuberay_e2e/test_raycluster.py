"""Mirrors of KubeRay v1.7.0 ``test/e2e/raycluster_test.go``: TestRayClusterManagedBy,
TestRayClusterSuspend, TestRayClusterWithResourceQuota, TestRayClusterScalingDown and
TestRayClusterUpgradeStrategy."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controllers.constants import RAYCLUSTERS
from kuberay_py.client import ApiError
from kuberay_py.client.resources import PODS
from tests.live import update_live

from .conftest import E2E, condition, create_quota, eventually, has_condition, ray_cluster_spec, state_is

RECREATE_HASH = "ray.io/upgrade-strategy-recreate-hash"


def raycluster(name: str, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": spec if spec is not None else ray_cluster_spec(),
    }


async def test_ray_cluster_managed_by(e2e: E2E) -> None:
    """raycluster_test.go:TestRayClusterManagedBy, its three subtests. The Kueue-managed cluster
    is created first; once the KubeRay-managed one (queued after it) is Ready, the first must
    still have no conditions (Go: ``Consistently`` for 3 s)."""
    sc = e2e
    skip = raycluster("raycluster-skip")
    skip["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    await sc.client.create(RAYCLUSTERS, skip, sc.namespace)
    ok = raycluster("raycluster-ok")
    ok["spec"]["managedBy"] = "ray.io/kuberay-operator"
    await sc.client.create(RAYCLUSTERS, ok, sc.namespace)
    await sc.until_cluster("raycluster-ok", state_is("ready"), "Ready")
    assert not ((await sc.cluster("raycluster-skip")).get("status") or {}).get("conditions")
    assert not await sc.pods("raycluster-skip")
    # managedBy is immutable
    with pytest.raises(ApiError) as immutable:
        await sc.client.patch(
            RAYCLUSTERS, "raycluster-skip", {"spec": {"managedBy": "ray.io/kuberay-operator"}}, sc.namespace
        )
    assert immutable.value.status == 422
    assert (await sc.cluster("raycluster-skip"))["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    # a controller that is neither KubeRay nor MultiKueue is rejected at admission
    fail = raycluster("raycluster-fail")
    fail["spec"]["managedBy"] = "controller.com/not-supported"
    with pytest.raises(ApiError) as invalid:
        await sc.client.create(RAYCLUSTERS, fail, sc.namespace)
    assert invalid.value.status == 422


async def test_ray_cluster_suspend(e2e: E2E) -> None:
    """raycluster_test.go:TestRayClusterSuspend."""
    sc = e2e
    name = "raycluster-suspend"
    await sc.client.create(RAYCLUSTERS, raycluster(name), sc.namespace)
    await sc.until_cluster(
        name, has_condition("HeadPodReady", "True", "HeadPodRunningAndReady"), "head ready"
    )
    await sc.until_cluster(
        name, has_condition("RayClusterProvisioned", "True", "AllPodRunningAndReadyFirstTime"), "provisioned"
    )
    await sc.client.patch(RAYCLUSTERS, name, {"spec": {"suspend": True}}, sc.namespace)
    await sc.until_cluster(
        name, has_condition("RayClusterSuspended", "True", "RayClusterSuspended"), "suspended"
    )
    await sc.until_cluster(name, has_condition("HeadPodReady", "False", "HeadPodNotFound"), "no head")
    await sc.until_cluster(
        name, has_condition("RayClusterProvisioned", "False", "RayClusterPodsProvisioning"), "not provisioned"
    )
    await sc.client.patch(RAYCLUSTERS, name, {"spec": {"suspend": False}}, sc.namespace)
    await sc.until_cluster(
        name, has_condition("RayClusterSuspended", "False", "RayClusterSuspended"), "resumed"
    )
    await sc.until_cluster(
        name, has_condition("HeadPodReady", "True", "HeadPodRunningAndReady"), "head ready"
    )
    await sc.until_cluster(
        name, has_condition("RayClusterProvisioned", "True", "AllPodRunningAndReadyFirstTime"), "provisioned"
    )


async def test_ray_cluster_with_resource_quota(e2e: E2E) -> None:
    """raycluster_test.go:TestRayClusterWithResourceQuota: a quota of 0.1 CPU / 0.1 Gi of limits
    rejects the head Pod, and the RayCluster says so in its ReplicaFailure condition."""
    sc = e2e
    await create_quota(sc, "test-quota", {"limits.cpu": "0.1", "limits.memory": "0.1Gi"})
    name = "raycluster-resource-quota"
    await sc.client.create(RAYCLUSTERS, raycluster(name), sc.namespace)

    def replica_failure(obj: dict[str, Any]) -> bool:
        cond = condition(obj, "ReplicaFailure")
        return (
            cond.get("status") == "True"
            and cond.get("reason") == "FailedCreateHeadPod"
            and "forbidden: exceeded quota" in cond.get("message", "")
        )

    await sc.until_cluster(name, replica_failure, "ReplicaFailure: exceeded quota")


async def test_ray_cluster_scaling_down(e2e: E2E) -> None:
    """raycluster_test.go:TestRayClusterScalingDown: with a finalizer holding every Pod, scaling
    the group from 2 to 1 marks exactly one worker for deletion and never the head."""
    sc = e2e
    name = "raycluster-scaling-down"
    spec = ray_cluster_spec()
    spec["headGroupSpec"]["template"]["metadata"] = {"finalizers": ["test.kuberay.io/finalizers"]}
    group = spec["workerGroupSpecs"][0]
    group.update(replicas=2, minReplicas=1, maxReplicas=5)
    group["template"]["metadata"] = {"finalizers": ["test.kuberay.io/finalizers"]}
    await sc.client.create(RAYCLUSTERS, raycluster(name, spec), sc.namespace)
    await sc.until_cluster(name, state_is("ready"), "Ready")
    all_pods = await sc.pods(name)
    assert len(all_pods) == 3

    def scale_down(cluster: dict[str, Any]) -> None:
        cluster["spec"]["workerGroupSpecs"][0]["replicas"] = 1

    await update_live(sc.client, RAYCLUSTERS, name, sc.namespace, scale_down)

    async def one_deleting() -> bool:
        workers = await sc.pods(name, "worker")
        marks = sorted(bool(p["metadata"].get("deletionTimestamp")) for p in workers)
        return marks == [False, True]

    try:
        await eventually(one_deleting, "exactly one worker with a deletionTimestamp")
        (head,) = await sc.pods(name, "head")
        assert not head["metadata"].get("deletionTimestamp")
    finally:
        for pod in all_pods:
            await sc.client.patch(
                PODS, pod["metadata"]["name"], {"metadata": {"finalizers": []}}, sc.namespace
            )


async def test_ray_cluster_upgrade_strategy(e2e: E2E) -> None:
    """raycluster_test.go:TestRayClusterUpgradeStrategy: Recreate replaces the Pods when the Ray
    version and images change, and the new head carries a new recreate hash."""
    sc = e2e
    name = "raycluster-upgrade-recreate"
    spec = ray_cluster_spec()
    spec["upgradeStrategy"] = {"type": "Recreate"}
    await sc.client.create(RAYCLUSTERS, raycluster(name, copy.deepcopy(spec)), sc.namespace)
    await sc.until_cluster(name, state_is("ready"), "Ready")
    (head,) = await sc.pods(name, "head")
    first_hash = head["metadata"]["annotations"][RECREATE_HASH]
    assert len(await sc.pods(name, "worker")) == 1

    def upgrade(cluster: dict[str, Any]) -> None:
        spec = cluster["spec"]
        spec["rayVersion"] = "2.51.0"
        spec["headGroupSpec"]["template"]["spec"]["containers"][0]["image"] = "rayproject/ray:2.51.0"
        spec["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["image"] = "rayproject/ray:2.51.0"

    await update_live(sc.client, RAYCLUSTERS, name, sc.namespace, upgrade)

    async def new_head() -> dict[str, Any] | None:
        for pod in await sc.pods(name, "head"):
            fresh = pod["metadata"]["name"] != head["metadata"]["name"]
            if fresh and (pod.get("status") or {}).get("phase") == "Running":
                return pod
        return None

    replaced = await eventually(new_head, "a new Running head Pod", 60)
    assert replaced["metadata"]["annotations"][RECREATE_HASH] != first_hash

    async def one_worker() -> bool:
        return len(await sc.pods(name, "worker")) == 1

    await eventually(one_worker, "one worker Pod")
