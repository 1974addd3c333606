"""KubernetesWAS (alpha gate, off by default): the scheduling.k8s.io/v1alpha2 Workload and PodGroup
and the Pods' schedulingGroup, derived from v1.7.0 source
(controllers/ray/batchscheduler/kubernetes-was/v1alpha2 and test/e2ekuberneteswas).

The v1alpha2 API is served natively by kube-apiserver 1.36 and by the built-in server, both
started with the alpha group on (``tests/external_apis.py``), so these tests run in both modes and
read back what kube-apiserver 1.36.2 defaults: a template's ``schedulingConstraints: null``, a
PodGroup's ``disruptionMode: Pod``, ``status: {}`` and its protection finalizer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from controllers import constants as C
from controllers.batchscheduler import UnknownScheduler, from_options
from controllers.batchscheduler import kubernetes_was as was
from controllers.rayjob.builders import submitter_pod_spec
from kuberay_py.client import Client
from kuberay_py.client.resources import PODS
from kuberay_py.envtest import Environment
from tests import external_apis
from tests.api_objects import controller_refs, get_or_none
from tests.integration.batchscheduler.test_batch_schedulers import cluster_spec
from tests.live import update_live
from tests.polling import eventually

GANG = {"ray.io/gang-scheduling-enabled": "true"}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def env() -> AsyncIterator[Environment]:
    async with external_apis.environment("kubernetes-was") as e:
        yield e


@pytest_asyncio.fixture(loop_scope="session")
async def setup(env: Environment) -> AsyncIterator[tuple[Client, str]]:
    ns = await env.create_namespace(generate_name="was-")
    scheduler = from_options(False, "", submitter_pod_spec=submitter_pod_spec, kubernetes_was=True)
    try:
        async with external_apis.operator(env, [ns], external_apis.with_options(batch_scheduler=scheduler)):
            client = env.new_client()
            try:
                yield client, ns
            finally:
                await client.close()
    finally:
        await env.delete_namespace(ns)


def raycluster(name: str, ns: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": cluster_spec(),
    }


async def _pods(client: Client, ns: str, cluster: str, count: int) -> list[dict[str, Any]]:
    async def check() -> list[dict[str, Any]] | None:
        items = (await client.list(PODS, ns, label_selector=f"{C.RAY_CLUSTER_LABEL_KEY}={cluster}"))["items"]
        live = [p for p in items if not p["metadata"].get("deletionTimestamp")]
        return live if len(live) == count else None

    found: list[dict[str, Any]] = await eventually(check, f"{count} Pods of {cluster}")
    return found


async def test_gang_cluster_gets_workload_pod_group_and_scheduling_group(setup: tuple[Client, str]) -> None:
    client, ns = setup
    created = await client.create(C.RAYCLUSTERS, raycluster("gang", ns, dict(GANG)), ns)

    workload = await eventually(lambda: get_or_none(client, was.WORKLOADS, "gang", ns), "the Workload")
    assert workload["metadata"]["labels"] == {"ray.io/cluster": "gang"}
    assert workload["metadata"]["ownerReferences"] == controller_refs(created)
    assert workload["spec"] == {
        "controllerRef": {"apiGroup": "ray.io", "kind": "RayCluster", "name": "gang"},
        "podGroupTemplates": [
            {"name": "cluster", "schedulingPolicy": {"gang": {"minCount": 3}}, "schedulingConstraints": None}
        ],
    }
    group = await eventually(lambda: get_or_none(client, was.PODGROUPS, "gang-cluster", ns), "the PodGroup")
    assert group["metadata"]["labels"] == {"ray.io/cluster": "gang"}
    assert group["metadata"]["finalizers"] == [was.PROTECTION_FINALIZER]
    assert group["status"] == {}
    assert group["metadata"]["ownerReferences"] == controller_refs(created)
    assert group["spec"] == {
        "podGroupTemplateRef": {"workload": {"workloadName": "gang", "podGroupTemplateName": "cluster"}},
        "schedulingPolicy": {"gang": {"minCount": 3}},
        "disruptionMode": "Pod",
    }
    for pod in await _pods(client, ns, "gang", 3):
        assert pod["spec"]["schedulerName"] == "default-scheduler"
        assert pod["spec"]["schedulingGroup"] == {"podGroupName": "gang-cluster"}

    # A new size: the stale Workload goes (PodGroup first), then both come back with minCount 4.
    await update_live(
        client, C.RAYCLUSTERS, "gang", ns, lambda o: o["spec"]["workerGroupSpecs"][0].update(replicas=3)
    )

    async def resized() -> bool:
        wl = await get_or_none(client, was.WORKLOADS, "gang", ns)
        pg = await get_or_none(client, was.PODGROUPS, "gang-cluster", ns)
        return bool(
            wl
            and pg
            and wl["spec"]["podGroupTemplates"][0]["schedulingPolicy"]["gang"]["minCount"] == 4
            and pg["spec"]["schedulingPolicy"]["gang"]["minCount"] == 4
        )

    await eventually(resized, "the Workload and PodGroup recreated with minCount 4")


async def test_without_gang_label_nothing_and_default_pods(setup: tuple[Client, str]) -> None:
    client, ns = setup
    await client.create(C.RAYCLUSTERS, raycluster("plain", ns, {}), ns)
    for pod in await _pods(client, ns, "plain", 3):
        assert "schedulingGroup" not in pod["spec"]
        assert pod["spec"].get("schedulerName") in (None, "default-scheduler")
    assert await get_or_none(client, was.WORKLOADS, "plain", ns) is None
    assert await get_or_none(client, was.PODGROUPS, "plain-cluster", ns) is None


async def test_removing_the_gang_label_deletes_both(setup: tuple[Client, str]) -> None:
    client, ns = setup
    await client.create(C.RAYCLUSTERS, raycluster("drop", ns, dict(GANG)), ns)
    await eventually(lambda: get_or_none(client, was.PODGROUPS, "drop-cluster", ns), "the PodGroup")
    # The operator writes the RayCluster too (its status): a read-modify-write retried on 409.
    await update_live(client, C.RAYCLUSTERS, "drop", ns, lambda o: o["metadata"].update(labels={}))

    async def both_gone() -> bool:
        return (
            await get_or_none(client, was.PODGROUPS, "drop-cluster", ns) is None
            and await get_or_none(client, was.WORKLOADS, "drop", ns) is None
        )

    await eventually(both_gone, "the PodGroup and Workload deleted")


def test_gate_cannot_be_combined_with_a_batch_scheduler() -> None:
    with pytest.raises(UnknownScheduler, match="KubernetesWAS feature gate cannot be combined"):
        from_options(False, "volcano", submitter_pod_spec=submitter_pod_spec, kubernetes_was=True)
    with pytest.raises(UnknownScheduler):
        from_options(True, "", submitter_pod_spec=submitter_pod_spec, kubernetes_was=True)
    assert from_options(False, "", submitter_pod_spec=submitter_pod_spec, kubernetes_was=False) is None
