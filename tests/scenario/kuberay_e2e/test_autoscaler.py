"""Mirrors of what KubeRay v1.7.0's ``test/e2eautoscaler`` asserts of the operator.

The Ray autoscaler itself is not here (the fake Ray heads run none), so each test plays its part
the way it writes to the RayCluster: ``replicas`` of a group, plus ``scaleStrategy.workersToDelete``
naming the Pods it drains. What is asserted is the operator's answer: worker Pods created and
deleted (exactly the named ones; a multi-host slice whole), ``status.desiredWorkerReplicas``
following ``replicas`` clamped to ``minReplicas``/``maxReplicas``, a worker group added to a
running cluster, Pods deleted by hand replaced, and the autoscaler v2 wiring (the
``RAY_CLOUD_INSTANCE_ID`` env the v2 autoscaler reads as its instance id, ``restartPolicy: Never``).
The map from each of KubeRay's 15 tests to these is in docs/raycluster.md.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controllers import constants as C
from controllers.constants import RAYCLUSTERS
from kuberay_py.client.resources import PODS
from tests.live import update_live

from .conftest import E2E, eventually, ray_cluster_spec, state_is
from .test_raycluster import raycluster

VERSIONS = ["v1", "v2"]  # KubeRay's ``tests``: autoscaling enabled / autoscaler v2 enabled


def autoscaling_spec(version: str, group: str = "small-group", **fields: Any) -> dict[str, Any]:
    """KubeRay's autoscaler e2e cluster: head with ``num-cpus: 0``, one group from 0 to 3;
    for v2 the head's ``RAY_ENABLE_AUTOSCALER_V2=1`` and ``restartPolicy: Never`` everywhere."""
    spec = ray_cluster_spec()
    spec["enableInTreeAutoscaling"] = True
    spec["headGroupSpec"]["rayStartParams"] = {"num-cpus": "0"}
    worker = spec["workerGroupSpecs"][0]
    worker.update(groupName=group, replicas=0, minReplicas=0, maxReplicas=3)
    worker.update(fields)
    if version == "v2":
        head = spec["headGroupSpec"]["template"]["spec"]
        head["restartPolicy"] = "Never"
        head["containers"][0]["env"] = [{"name": "RAY_ENABLE_AUTOSCALER_V2", "value": "1"}]
        worker["template"]["spec"]["restartPolicy"] = "Never"
    return spec


def group_of(pod: dict[str, Any]) -> str:
    return str(pod["metadata"]["labels"].get(C.RAY_NODE_GROUP_LABEL_KEY))


async def group_pods(sc: E2E, name: str, group: str) -> list[dict[str, Any]]:
    """GetGroupPods: the group's Pods as the API lists them, terminating ones included."""
    return [p for p in await sc.pods(name, "worker") if group_of(p) == group]


async def until_pods(sc: E2E, name: str, group: str, n: int) -> list[dict[str, Any]]:
    async def probe() -> list[dict[str, Any]] | bool:
        pods = await group_pods(sc, name, group)
        return (pods or True) if len(pods) == n else False

    found = await eventually(probe, f"{n} Pods in group {group}")
    return found if isinstance(found, list) else []


def desired_is(n: int) -> Any:
    return lambda obj: (obj.get("status") or {}).get("desiredWorkerReplicas", 0) == n  # omitempty


async def autoscale(sc: E2E, name: str, index: int, replicas: int, delete: list[str] | None = None) -> None:
    """What the Ray autoscaler writes: a group's replicas and the workers it chose to remove."""

    def edit(obj: dict[str, Any]) -> None:
        group = obj["spec"]["workerGroupSpecs"][index]
        group["replicas"] = replicas
        group["scaleStrategy"] = {"workersToDelete": list(delete or [])}

    await update_live(sc.client, RAYCLUSTERS, name, sc.namespace, edit)


async def create_ready(sc: E2E, name: str, spec: dict[str, Any], desired: int) -> None:
    await sc.client.create(RAYCLUSTERS, raycluster(name, copy.deepcopy(spec)), sc.namespace)
    await sc.until_cluster(name, state_is("ready"), "Ready")
    assert desired_is(desired)(await sc.cluster(name))


@pytest.mark.parametrize("version", VERSIONS)
async def test_autoscaler_replicas_and_workers_to_delete(e2e: E2E, version: str) -> None:
    """TestRayClusterAutoscaler (and WithFakeGPU, WithCustomResource, GPUNodesForCPUTasks,
    SDKRequestResources, V2IdleTimeout, GCSFT): each autoscaler step up creates a worker, each
    step down deletes exactly the worker it names, and ``desiredWorkerReplicas`` follows."""
    sc, name, group = e2e, "ray-cluster", "small-group"
    await create_ready(sc, name, autoscaling_spec(version), 0)
    head = (await sc.pods(name, "head"))[0]
    assert [c["name"] for c in head["spec"]["containers"]][-1] == "autoscaler"
    await autoscale(sc, name, 0, 1)
    await sc.until_cluster(name, desired_is(1), "desiredWorkerReplicas 1")
    (first,) = await until_pods(sc, name, group, 1)
    await autoscale(sc, name, 0, 2)
    await sc.until_cluster(name, desired_is(2), "desiredWorkerReplicas 2")
    pods = await until_pods(sc, name, group, 2)
    for pod in pods:
        ray = pod["spec"]["containers"][0]
        env = {e["name"]: e for e in ray.get("env") or []}
        assert env[C.RAY_CLOUD_INSTANCE_ID]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
        if version == "v2":
            assert pod["spec"]["restartPolicy"] == "Never"
    # Scale down: the autoscaler names the idle worker; that one goes, the other stays.
    idle = first["metadata"]["name"]
    await autoscale(sc, name, 0, 1, [idle])
    await sc.until_cluster(name, desired_is(1), "desiredWorkerReplicas 1")
    (left,) = await until_pods(sc, name, group, 1)
    assert left["metadata"]["name"] != idle
    await autoscale(sc, name, 0, 0, [left["metadata"]["name"]])
    await sc.until_cluster(name, desired_is(0), "desiredWorkerReplicas 0")
    await until_pods(sc, name, group, 0)


@pytest.mark.parametrize("version", VERSIONS)
async def test_autoscaler_multi_host_slice(e2e: E2E, version: str) -> None:
    """TestRayClusterAutoscalerWithFakeTPU (multi-host): one replica is numOfHosts Pods with one
    replica index; with maxReplicas set to 0 the slice the autoscaler names goes whole."""
    sc, name, group, hosts = e2e, "ray-cluster-multi-host", "tpu-multi-host-group", 4
    spec = autoscaling_spec(version, group, numOfHosts=hosts, maxReplicas=4)
    await create_ready(sc, name, spec, 0)
    await autoscale(sc, name, 0, 1)
    pods = await until_pods(sc, name, group, hosts)
    labels = [p["metadata"]["labels"] for p in pods]
    assert {lab[C.RAY_WORKER_REPLICA_INDEX_LABEL_KEY] for lab in labels} == {"0"}
    assert sorted(lab[C.RAY_HOST_INDEX_LABEL_KEY] for lab in labels) == ["0", "1", "2", "3"]

    def no_max(obj: dict[str, Any]) -> None:
        obj["spec"]["workerGroupSpecs"][0]["maxReplicas"] = 0

    await update_live(sc.client, RAYCLUSTERS, name, sc.namespace, no_max)
    await sc.until_cluster(name, desired_is(0), "desiredWorkerReplicas 0")
    await autoscale(sc, name, 0, 0, [pods[0]["metadata"]["name"]])
    await until_pods(sc, name, group, 0)


@pytest.mark.parametrize("version", VERSIONS)
async def test_autoscaler_min_replicas_update(e2e: E2E, version: str) -> None:
    """TestRayClusterAutoscalerMinReplicasUpdate: raising minReplicas above replicas makes the
    operator create the missing worker; the autoscaler then scales to 3."""
    sc, name, group = e2e, "ray-cluster", "test-group"
    await create_ready(sc, name, autoscaling_spec(version, group, replicas=1), 1)

    def min_two(obj: dict[str, Any]) -> None:
        obj["spec"]["workerGroupSpecs"][0]["minReplicas"] = 2

    await update_live(sc.client, RAYCLUSTERS, name, sc.namespace, min_two)
    await sc.until_cluster(name, desired_is(2), "desiredWorkerReplicas 2")
    await until_pods(sc, name, group, 2)
    await autoscale(sc, name, 0, 3)
    await sc.until_cluster(name, desired_is(3), "desiredWorkerReplicas 3")
    await until_pods(sc, name, group, 3)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("updated_max", [3, 1])
async def test_autoscaler_max_replicas_update(e2e: E2E, version: str, updated_max: int) -> None:
    """TestRayClusterAutoscalerMaxReplicasUpdate (2 -> 3 and 2 -> 1): desiredWorkerReplicas
    follows the new maximum at once; the operator deletes nothing by itself (the autoscaler
    chooses), and the autoscaler's replicas and workersToDelete are honoured."""
    sc, name, group = e2e, "ray-cluster", "test-group"
    spec = autoscaling_spec(version, group, replicas=1, minReplicas=1, maxReplicas=2)
    await create_ready(sc, name, spec, 1)
    await autoscale(sc, name, 0, 2)
    pods = await until_pods(sc, name, group, 2)

    def new_max(obj: dict[str, Any]) -> None:
        obj["spec"]["workerGroupSpecs"][0]["maxReplicas"] = updated_max

    await update_live(sc.client, RAYCLUSTERS, name, sc.namespace, new_max)
    await sc.until_cluster(name, desired_is(min(2, updated_max)), "desiredWorkerReplicas clamped")
    if updated_max < 2:
        assert len(await group_pods(sc, name, group)) == 2  # no random deletion with autoscaling
        await autoscale(sc, name, 0, updated_max, [pods[0]["metadata"]["name"]])
    else:
        await autoscale(sc, name, 0, updated_max)
    await sc.until_cluster(name, desired_is(updated_max), f"desiredWorkerReplicas {updated_max}")
    await until_pods(sc, name, group, updated_max)


@pytest.mark.parametrize("version", VERSIONS)
async def test_autoscaler_add_new_worker_group(e2e: E2E, version: str) -> None:
    """TestRayClusterAutoscalerAddNewWorkerGroup: a group added to a running cluster gets
    workers when the autoscaler asks, the existing group's Pods are left alone."""
    sc, name = e2e, "ray-cluster"
    spec = autoscaling_spec(version, "cpu-group")
    await create_ready(sc, name, spec, 0)
    await autoscale(sc, name, 0, 1)
    (cpu,) = await until_pods(sc, name, "cpu-group", 1)

    def add_gpu_group(obj: dict[str, Any]) -> None:
        groups = obj["spec"]["workerGroupSpecs"]
        gpu = copy.deepcopy(groups[0])
        gpu.update(groupName="gpu-group", replicas=0, rayStartParams={"num-cpus": "0", "num-gpus": "1"})
        gpu.pop("scaleStrategy", None)
        groups.append(gpu)

    await update_live(sc.client, RAYCLUSTERS, name, sc.namespace, add_gpu_group)
    await autoscale(sc, name, 1, 1)
    (gpu,) = await until_pods(sc, name, "gpu-group", 1)
    await autoscale(sc, name, 0, 2)
    cpus = await until_pods(sc, name, "cpu-group", 2)
    assert cpu["metadata"]["name"] in {p["metadata"]["name"] for p in cpus}
    await autoscale(sc, name, 1, 0, [gpu["metadata"]["name"]])
    await until_pods(sc, name, "gpu-group", 0)
    assert {p["metadata"]["name"] for p in await group_pods(sc, name, "cpu-group")} == {
        p["metadata"]["name"] for p in cpus
    }


@pytest.mark.parametrize("version", VERSIONS)
async def test_autoscaler_workers_deleted_by_hand_are_replaced(e2e: E2E, version: str) -> None:
    """TestRayClusterAutoscalerPlacementGroup: the workers of a placement group deleted by hand
    are replaced by as many new ones (replicas unchanged, autoscaling on)."""
    sc, name, group = e2e, "ray-cluster", "cpu-group"
    await create_ready(sc, name, autoscaling_spec(version, group), 0)
    await autoscale(sc, name, 0, 2)
    old = {p["metadata"]["name"] for p in await until_pods(sc, name, group, 2)}
    for pod in old:
        await sc.client.delete(PODS, pod, sc.namespace)

    async def replaced() -> bool:
        pods = await group_pods(sc, name, group)
        return len(pods) == 2 and not old & {p["metadata"]["name"] for p in pods}

    await eventually(replaced, "2 new workers instead of the deleted ones")


@pytest.mark.parametrize("version", VERSIONS)
async def test_autoscaler_upscaling_to_ten(e2e: E2E, version: str) -> None:
    """TestRayClusterAutoscalerUpscalingModeConservative / WithDesiredState: the autoscaler's
    steps (5, then 10) all become worker Pods."""
    sc, name, group = e2e, "ray-cluster", "test-group"
    spec = autoscaling_spec(version, group, maxReplicas=10)
    spec["autoscalerOptions"] = {"upscalingMode": "Conservative"}
    if version == "v2":
        spec["autoscalerOptions"]["version"] = "v2"
    await create_ready(sc, name, spec, 0)
    await autoscale(sc, name, 0, 5)
    await until_pods(sc, name, group, 5)
    await autoscale(sc, name, 0, 10)
    await sc.until_cluster(name, desired_is(10), "desiredWorkerReplicas 10")
    await until_pods(sc, name, group, 10)


@pytest.mark.parametrize("version", VERSIONS)
async def test_autoscaler_after_the_head_is_replaced(e2e: E2E, version: str) -> None:
    """TestRayClusterAutoscalerGCSFT, the operator's part: a deleted head Pod is replaced, and
    the autoscaler's steps are honoured before and after (Redis and its clean-up are the GCS
    fault-tolerance tests' part)."""
    sc, name, group = e2e, "ray-cluster", "small-group"
    await create_ready(sc, name, autoscaling_spec(version, maxReplicas=2), 0)
    await autoscale(sc, name, 0, 1)
    (worker,) = await until_pods(sc, name, group, 1)
    await autoscale(sc, name, 0, 0, [worker["metadata"]["name"]])
    await until_pods(sc, name, group, 0)
    (head,) = await sc.pods(name, "head")
    await sc.client.delete(PODS, head["metadata"]["name"], sc.namespace)

    async def new_head() -> bool:
        heads = await sc.pods(name, "head")
        return len(heads) == 1 and heads[0]["metadata"]["name"] != head["metadata"]["name"]

    await eventually(new_head, "a new head Pod")
    await sc.until_cluster(name, state_is("ready"), "Ready with the new head")
    await autoscale(sc, name, 0, 1)
    await sc.until_cluster(name, desired_is(1), "desiredWorkerReplicas 1")
    await until_pods(sc, name, group, 1)


@pytest.mark.parametrize("version", VERSIONS)
async def test_autoscaler_idle_worker_kept_until_named(e2e: E2E, version: str) -> None:
    """TestRayClusterAutoscalerDoNotRemoveIdlesForPlacementGroup, the operator's part: the
    worker template's own init container is kept (it delays the second worker), and an idle
    worker is never deleted while the autoscaler does not name it."""
    sc, name, group = e2e, "ray-cluster", "short-idle-group"
    spec = autoscaling_spec(version, group, maxReplicas=2)
    spec["autoscalerOptions"] = {"idleTimeoutSeconds": 6}
    init = {"name": "init-sleep", "image": "rayproject/ray:2.60.0", "command": ["bash", "-c", "sleep 0"]}
    spec["workerGroupSpecs"][0]["template"]["spec"]["initContainers"] = [init]
    await create_ready(sc, name, spec, 0)
    await autoscale(sc, name, 0, 1)
    (first,) = await until_pods(sc, name, group, 1)
    assert first["spec"]["initContainers"][0]["name"] == "init-sleep"
    await autoscale(sc, name, 0, 2)
    pods = await until_pods(sc, name, group, 2)
    assert first["metadata"]["name"] in {p["metadata"]["name"] for p in pods}
