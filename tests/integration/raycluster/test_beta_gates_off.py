"""KubeRay v1.7.0's beta gates switched off, through the API server.

``RayClusterStatusConditions=false``: a ready RayCluster has no status condition, and a suspend
takes KubeRay's older path (every Pod deleted in the round the suspend is seen, ``state:
suspended`` once none is left, no RayClusterSuspending/Suspended conditions).
``RayMultiHostIndexing=false``: multi-host worker Pods carry none of the replica index/name or
host index labels, and a group is reconciled Pod by Pod (a lost host is replaced alone).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from controllers import constants as C
from controllers.api.gates import ClusterGates
from kuberay_py.client import Client
from kuberay_py.client.resources import PODS
from tests.integration.raycluster.conftest import (
    all_running,
    head_pods,
    list_pods,
    sample_cluster,
    worker_pods,
)
from tests.live import update_live
from tests.polling import eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

RC = C.RAYCLUSTERS
MULTI_HOST_LABELS = {
    C.RAY_WORKER_REPLICA_INDEX_LABEL_KEY,
    C.RAY_WORKER_REPLICA_NAME_LABEL_KEY,
    C.RAY_HOST_INDEX_LABEL_KEY,
}


async def status_of(client: Client, ns: str, name: str) -> dict[str, Any]:
    return (await client.get(RC, name, ns)).get("status") or {}


def in_state(client: Client, ns: str, name: str, want: str) -> Callable[[], Any]:
    async def check() -> dict[str, Any] | None:
        status = await status_of(client, ns, name)
        return status if status.get("state") == want else None

    return check


def pod_count(client: Client, ns: str, name: str, want: int) -> Callable[[], Any]:
    async def check() -> bool:
        return len(await list_pods(client, ns, **{C.RAY_CLUSTER_LABEL_KEY: name})) == want

    return check


async def test_status_conditions_off_no_conditions_and_the_legacy_suspend(
    start_gated: Callable[[ClusterGates], None], rc_client: Client, rc_namespace: str
) -> None:
    start_gated(ClusterGates(status_conditions=False))
    ns, name = rc_namespace, "no-conditions"
    await rc_client.create(RC, sample_cluster(name, ns, replicas=1), ns)
    await eventually(pod_count(rc_client, ns, name, 2), "head and worker")
    await all_running(rc_client, ns, name)
    ready = await eventually(in_state(rc_client, ns, name, "ready"), "ready")
    assert "conditions" not in ready  # no HeadPodReady, RayClusterProvisioned, suspend pair
    assert ready["readyWorkerReplicas"] == 1 and ready["head"]["podName"]

    await update_live(rc_client, RC, name, ns, lambda o: o["spec"].update(suspend=True))
    suspended = await eventually(in_state(rc_client, ns, name, "suspended"), "suspended")
    assert await list_pods(rc_client, ns, **{C.RAY_CLUSTER_LABEL_KEY: name}) == []
    assert "conditions" not in suspended

    await update_live(rc_client, RC, name, ns, lambda o: o["spec"].update(suspend=False))
    await eventually(pod_count(rc_client, ns, name, 2), "Pods back")
    await all_running(rc_client, ns, name)
    resumed = await eventually(in_state(rc_client, ns, name, "ready"), "ready again")
    assert "conditions" not in resumed


async def test_multi_host_indexing_off_pods_lack_the_labels_and_are_replaced_alone(
    start_gated: Callable[[ClusterGates], None], rc_client: Client, rc_namespace: str
) -> None:
    start_gated(ClusterGates(multi_host_indexing=False))
    ns, name = rc_namespace, "no-indexing"
    body = sample_cluster(name, ns, replicas=2)
    body["spec"]["workerGroupSpecs"][0]["numOfHosts"] = 2
    await rc_client.create(RC, body, ns)

    async def four_workers() -> list[dict[str, Any]] | None:
        pods = await worker_pods(rc_client, ns, name)
        return pods if len(pods) == 4 else None

    workers = await eventually(four_workers, "replicas * numOfHosts worker Pods")
    for pod in workers:
        assert not MULTI_HOST_LABELS & set(pod["metadata"]["labels"]), pod["metadata"]["labels"]
    heads = await eventually(lambda: head_pods(rc_client, ns, name), "head Pod")
    assert C.RAY_WORKER_REPLICA_INDEX_LABEL_KEY not in heads[0]["metadata"]["labels"]

    # One host lost: KubeRay's gate-off path creates one Pod; the other hosts stay (gate on, the
    # whole replica group would be deleted and recreated).
    lost, *kept = workers
    await rc_client.delete(PODS, lost["metadata"]["name"], ns)

    async def replaced() -> bool:
        now = {p["metadata"]["uid"] for p in await worker_pods(rc_client, ns, name)}
        return len(now) == 4 and {p["metadata"]["uid"] for p in kept} <= now

    await eventually(replaced, "one new worker, the three others untouched")
