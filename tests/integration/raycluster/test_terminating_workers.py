"""A worker Pod being deleted keeps its place until it is gone (KubeRay's e2e
TestRayClusterSingleHostMultiSlice, on the API server alone).

envtest has no kubelet: a finalizer keeps the deleted Pod terminating for as long as the test
needs, and Pod status is written by hand as KubeRay's envtest suite does.
"""

from __future__ import annotations

from typing import Any

from controllers import constants as C
from kuberay_py.client import Client, NotFound
from kuberay_py.client.resources import PODS
from tests.integration.raycluster.conftest import Operator, all_running, sample_cluster, worker_pods
from tests.polling import eventually

RC = C.RAYCLUSTERS
HOLD = "test.kuberay.io/hold"


async def _group_pods(client: Client, ns: str, name: str) -> list[dict[str, Any]]:
    """Every worker Pod of the cluster, terminating ones included (what KubeRay's e2e counts)."""
    selector = f"{C.RAY_CLUSTER_LABEL_KEY}={name},{C.RAY_NODE_TYPE_LABEL_KEY}=worker"
    return list((await client.list(PODS, ns, label_selector=selector))["items"])


def _index(pod: dict[str, Any]) -> str:
    return str(pod["metadata"]["labels"].get(C.RAY_WORKER_REPLICA_INDEX_LABEL_KEY))


async def _release(client: Client, ns: str, pods: list[dict[str, Any]]) -> None:
    for pod in pods:
        try:
            await client.patch(PODS, pod["metadata"]["name"], {"metadata": {"finalizers": []}}, ns)
        except NotFound:
            continue


async def test_terminating_worker_keeps_its_replica_index_until_gone(
    operator: Operator, rc_client: Client, rc_namespace: str
) -> None:
    ns, name = rc_namespace, "raycluster-terminating-index"
    body = sample_cluster(name, ns, replicas=3, max_replicas=5)
    body["spec"]["workerGroupSpecs"][0]["template"]["metadata"] = {"finalizers": [HOLD]}
    await rc_client.create(RC, body, ns)
    try:

        async def three_workers() -> list[dict[str, Any]] | None:
            pods = await worker_pods(rc_client, ns, name)
            return pods if len(pods) == 3 else None

        pods = await eventually(three_workers, "3 workers")
        assert sorted(_index(p) for p in pods) == ["0", "1", "2"]
        await all_running(rc_client, ns, name)

        async def ready_workers(n: int) -> bool:
            status = (await rc_client.get(RC, name, ns)).get("status") or {}
            return status.get("readyWorkerReplicas") == n

        await eventually(lambda: ready_workers(3), "3 ready workers")
        (victim,) = [p for p in pods if _index(p) == "1"]
        await rc_client.delete(PODS, victim["metadata"]["name"], ns)
        # A terminating Pod is not ready: once the status says 2, a reconcile that saw the Pod
        # terminating has run its Pod phase (the status is computed after it).
        await eventually(lambda: ready_workers(2), "the terminating worker counted as not ready")
        now = await _group_pods(rc_client, ns, name)
        assert sorted((_index(p), bool(p["metadata"].get("deletionTimestamp"))) for p in now) == [
            ("0", False),
            ("1", True),
            ("2", False),
        ], "a replacement was created while the deleted worker still holds replica index 1"

        # Once it is gone, index 1 is given again.
        await _release(rc_client, ns, [victim])

        async def replaced() -> list[dict[str, Any]] | None:
            pods = await _group_pods(rc_client, ns, name)
            names = {p["metadata"]["name"] for p in pods}
            ok = len(pods) == 3 and victim["metadata"]["name"] not in names
            return pods if ok else None

        final = await eventually(replaced, "the deleted worker replaced")
        assert sorted(_index(p) for p in final) == ["0", "1", "2"]
    finally:
        await _release(rc_client, ns, await _group_pods(rc_client, ns, name))
