"""Mirror of KubeRay v1.7.0 ``test/e2e/raycluster_multi_host_test.go:TestRayClusterSingleHostMultiSlice``
(RayMultiHostIndexing on, its default).

KubeRay's test waits for 3 worker Pods after deleting the one with replica index 1 and then
expects exactly indices 0, 1, 2; whether it can see a fourth depends on when it polls. Here a
watch follows every worker Pod from the deletion until the replacement runs, so "never a fourth
Pod, never two Pods with index 1" is checked at every step, not at the moments a poll lands.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from controllers import constants as C
from controllers.constants import RAYCLUSTERS
from kuberay_py.client.resources import PODS
from tests.live import update_live

from .conftest import E2E, WAIT, eventually, ray_cluster_spec, state_is
from .test_raycluster import raycluster

GROUP = "single-host-group"


def _index(pod: dict[str, Any]) -> int:
    return int(pod["metadata"]["labels"][C.RAY_WORKER_REPLICA_INDEX_LABEL_KEY])


def verify_indices(pods: list[dict[str, Any]], expected: list[int]) -> None:
    """verifyWorkerGroupIndices for a single-host group: unique replica indices, no replica name
    or host index label."""
    group = [p for p in pods if p["metadata"]["labels"].get(C.RAY_NODE_GROUP_LABEL_KEY) == GROUP]
    assert len(group) == len(expected), [p["metadata"]["name"] for p in group]
    for pod in group:
        labels = pod["metadata"]["labels"]
        assert C.RAY_WORKER_REPLICA_NAME_LABEL_KEY not in labels
        assert C.RAY_HOST_INDEX_LABEL_KEY not in labels
    assert sorted(_index(p) for p in group) == expected


async def test_ray_cluster_single_host_multi_slice(e2e: E2E) -> None:
    sc = e2e
    name = "raycluster-singlehost"
    spec = ray_cluster_spec()
    spec["headGroupSpec"]["rayStartParams"] = {"num-cpus": "0"}
    group = spec["workerGroupSpecs"][0]
    group.update(groupName=GROUP, replicas=3, minReplicas=0, maxReplicas=5, numOfHosts=1)
    await sc.client.create(RAYCLUSTERS, raycluster(name, copy.deepcopy(spec)), sc.namespace)
    await sc.until_cluster(name, state_is("ready"), "Ready")

    async def workers(n: int) -> list[dict[str, Any]] | None:
        pods = await sc.pods(name, "worker")
        return pods if len(pods) == n else None

    pods = await eventually(lambda: workers(3), "3 worker Pods")
    verify_indices(pods, [0, 1, 2])

    # Delete the worker with replica index 1 and follow every worker Pod until it is replaced.
    (victim,) = [p for p in pods if _index(p) == 1]
    selector = f"ray.io/cluster={name},ray.io/node-type=worker"
    listing = await sc.client.list(PODS, sc.namespace, label_selector=selector)
    present = {p["metadata"]["name"]: p for p in listing["items"]}
    await sc.client.delete(PODS, victim["metadata"]["name"], sc.namespace)
    most, shared_index = len(present), False
    async with asyncio.timeout(WAIT):
        async for event in sc.client.watch(
            PODS,
            sc.namespace,
            resource_version=listing["metadata"]["resourceVersion"],
            label_selector=selector,
        ):
            obj = event["object"]
            if event["type"] == "DELETED":
                present.pop(obj["metadata"]["name"], None)
            elif event["type"] in ("ADDED", "MODIFIED"):
                present[obj["metadata"]["name"]] = obj
            most = max(most, len(present))
            indices = [_index(p) for p in present.values()]
            shared_index = shared_index or len(indices) != len(set(indices))
            replacement = [
                p for n, p in present.items() if n != victim["metadata"]["name"] and _index(p) == 1
            ]
            if victim["metadata"]["name"] not in present and replacement:
                break
    assert most == 3, f"{most} worker Pods at once while the deleted one was terminating"
    assert not shared_index, "two worker Pods held replica index 1 at once"
    pods = await eventually(lambda: workers(3), "3 worker Pods again")
    verify_indices(pods, [0, 1, 2])

    # Scale up from 3 to 4: the new Pod takes the next free index, 3.
    def scale_up(cluster: dict[str, Any]) -> None:
        cluster["spec"]["workerGroupSpecs"][0]["replicas"] = 4

    await update_live(sc.client, RAYCLUSTERS, name, sc.namespace, scale_up)
    pods = await eventually(lambda: workers(4), "4 worker Pods")
    verify_indices(pods, [0, 1, 2, 3])
