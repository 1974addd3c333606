"""The batch schedulers' objects on an API server, for RayCluster and RayJob.

Expected objects are derived from v1.7.0 source (controllers/ray/batchscheduler/** and their unit
tests: the ``createTestRayCluster`` / ``createTestRayJob`` shapes and the 3 members / 768m /
768Mi / 2 GPUs, 1268m / 968Mi figures come from volcano_scheduler_test.go). The PodGroup and
other external CRDs are the minimal stand-ins in tests/fixtures/external-crds (installed here);
no scheduler runs, and the operator reads nothing a scheduler writes.
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from controllers import constants as C
from controllers.batchscheduler import from_options, volcano
from controllers.batchscheduler import scheduler_plugins as sp
from controllers.rayjob.builders import submitter_pod_spec
from controllers.rayjob.options import RayJobOptions
from kuberay_py.client import Client
from kuberay_py.client.resources import EVENTS, JOBS, PODS
from kuberay_py.envtest import Environment
from tests import external_apis
from tests.api_objects import controller_refs, get_or_none
from tests.live import update_live
from tests.polling import eventually


def _container(name: str, gpu: bool = False) -> dict[str, Any]:
    limits: dict[str, str] = {"cpu": "500m", "memory": "512Mi"}
    if gpu:
        limits["nvidia.com/gpu"] = "1"
    return {
        "name": name,
        "image": "rayproject/ray:2.52.0",
        "resources": {"limits": limits, "requests": {"cpu": "256m", "memory": "256Mi"}},
    }


def cluster_spec(gpu: bool = True, hosts: int = 1) -> dict[str, Any]:
    """KubeRay's createTestRayCluster spec (volcano_scheduler_test.go)."""
    return {
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {"spec": {"containers": [_container("ray-head")]}},
        },
        "workerGroupSpecs": [
            {
                "groupName": "workers",
                "replicas": 2,
                "minReplicas": 1,
                "maxReplicas": 4,
                "numOfHosts": hosts,
                "rayStartParams": {},
                "template": {"spec": {"containers": [_container("ray-worker", gpu)]}},
            }
        ],
    }


def raycluster(name: str, ns: str, labels: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": ns, "labels": labels or {}, **extra},
        "spec": cluster_spec(),
    }


def rayjob(name: str, ns: str, labels: dict[str, str], mode: str = "K8sJobMode") -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "entrypoint": "python -c 'print(1)'",
            "submissionMode": mode,
            "rayClusterSpec": cluster_spec(gpu=False),
        },
    }


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def env() -> AsyncIterator[Environment]:
    async with external_apis.environment("volcano", "scheduler-plugins") as e:
        yield e


@pytest_asyncio.fixture(loop_scope="session")
async def client(env: Environment) -> AsyncIterator[Client]:
    c = env.new_client()
    try:
        yield c
    finally:
        await c.close()


@pytest_asyncio.fixture(loop_scope="session")
async def start(env: Environment) -> AsyncIterator[Any]:
    """``start(scheduler_name)``: a namespace with an operator using that scheduler."""
    async with contextlib.AsyncExitStack() as stack:

        async def go(name: str) -> str:
            ns = await env.create_namespace(generate_name="sched-")
            stack.push_async_callback(env.delete_namespace, ns)
            scheduler = from_options(False, name, submitter_pod_spec=submitter_pod_spec)
            await stack.enter_async_context(
                external_apis.operator(
                    env,
                    [ns],
                    external_apis.with_options(batch_scheduler=scheduler),
                    rayjob=RayJobOptions(batch_scheduler=scheduler),
                )
            )
            return ns

        yield go


async def pods(client: Client, ns: str, cluster: str, **labels: str) -> list[dict[str, Any]]:
    selector = ",".join(f"{k}={v}" for k, v in ({C.RAY_CLUSTER_LABEL_KEY: cluster} | labels).items())
    return list((await client.list(PODS, ns, label_selector=selector))["items"])


async def head_and_workers(client: Client, ns: str, cluster: str, workers: int) -> list[dict[str, Any]]:
    async def check() -> list[dict[str, Any]] | None:
        found = await pods(client, ns, cluster)
        return found if len(found) == workers + 1 else None

    result: list[dict[str, Any]] = await eventually(check, f"{workers + 1} Pods of {cluster}")
    return result


def by_group(found: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for p in found:
        out.setdefault(p["metadata"]["labels"][C.RAY_NODE_GROUP_LABEL_KEY], []).append(p)
    return out


async def make_ready(client: Client, ns: str, cluster: str) -> None:
    """What kubelet would write (envtest has none)."""
    for i, pod in enumerate(await pods(client, ns, cluster)):
        body = copy.deepcopy(pod)
        body["status"] = {
            "phase": "Running",
            "podIP": f"10.3.0.{i + 1}",
            "conditions": [{"type": "Ready", "status": "True"}],
        }
        await client.update_status(PODS, body)


QUEUE = {volcano.QUEUE_LABEL: "test-queue", volcano.PRIORITY_CLASS_LABEL: "test-priority"}


async def test_volcano_raycluster_podgroup_and_pods(client: Client, start: Any) -> None:
    ns = await start("volcano")
    created = await client.create(C.RAYCLUSTERS, raycluster("rc", ns, dict(QUEUE)), ns)

    pg = await eventually(lambda: get_or_none(client, volcano.PODGROUPS, "ray-rc-pg", ns), "the PodGroup")
    assert pg["spec"] == {
        "minMember": 3,
        "minResources": {"cpu": "768m", "memory": "768Mi", "nvidia.com/gpu": "2"},
        "queue": "test-queue",
        "priorityClassName": "test-priority",
    }
    assert pg["metadata"]["ownerReferences"] == controller_refs(created)
    groups = by_group(await head_and_workers(client, ns, "rc", 2))
    for group, members in groups.items():
        for pod in members:
            assert pod["spec"]["schedulerName"] == "volcano"
            assert pod["metadata"]["annotations"][volcano.GROUP_NAME_ANNOTATION] == "ray-rc-pg"
            assert pod["metadata"]["annotations"][volcano.TASK_SPEC_ANNOTATION] == group
            for key, value in QUEUE.items():
                assert pod["metadata"]["labels"][key] == value
    assert sorted(groups) == ["headgroup", "workers"]

    # A bigger cluster resizes the PodGroup (syncPodGroup's update).
    await update_live(
        client, C.RAYCLUSTERS, "rc", ns, lambda o: o["spec"]["workerGroupSpecs"][0].update(replicas=3)
    )

    async def resized() -> dict[str, Any] | None:
        got = await client.get(volcano.PODGROUPS, "ray-rc-pg", ns)
        return got if got["spec"].get("minMember") == 4 else None

    pg = await eventually(resized, "the PodGroup resized to 4 members")
    assert pg["spec"]["minResources"] == {"cpu": "1024m", "memory": "1Gi", "nvidia.com/gpu": "3"}


async def test_volcano_rayjob_podgroup_cluster_and_submitter(client: Client, start: Any) -> None:
    ns = await start("volcano")
    job = await client.create(C.RAYJOBS, rayjob("job", ns, dict(QUEUE)), ns)

    pg = await eventually(
        lambda: get_or_none(client, volcano.PODGROUPS, "ray-job-pg", ns), "the RayJob PodGroup"
    )
    # MinMember leaves the submitter out; MinResources reserves its 500m / 200Mi requests.
    assert pg["spec"] == {
        "minMember": 3,
        "minResources": {"cpu": "1268m", "memory": "968Mi"},
        "queue": "test-queue",
        "priorityClassName": "test-priority",
    }
    assert [(r["kind"], r["uid"]) for r in pg["metadata"]["ownerReferences"]] == [
        ("RayJob", job["metadata"]["uid"])
    ]

    async def cluster_name() -> str | None:
        got = await client.get(C.RAYJOBS, "job", ns)
        name = (got.get("status") or {}).get("rayClusterName")
        return str(name) if name and await get_or_none(client, C.RAYCLUSTERS, str(name), ns) else None

    name = await eventually(cluster_name, "the RayJob's RayCluster")
    cluster = await client.get(C.RAYCLUSTERS, name, ns)
    assert cluster["metadata"]["annotations"][volcano.GROUP_NAME_ANNOTATION] == "ray-job-pg"
    assert cluster["metadata"]["annotations"][volcano.TASK_SPEC_ANNOTATION] == ""
    assert "schedulerName" not in cluster["spec"]
    found = await head_and_workers(client, ns, name, 2)
    assert {p["metadata"]["annotations"][volcano.GROUP_NAME_ANNOTATION] for p in found} == {"ray-job-pg"}
    # The RayJob's cluster gets no PodGroup of its own.
    assert await get_or_none(client, volcano.PODGROUPS, f"ray-{name}-pg", ns) is None

    await make_ready(client, ns, name)
    submitter = await eventually(lambda: get_or_none(client, JOBS, "job", ns), "the submitter Job")
    template = submitter["spec"]["template"]
    assert template["spec"]["schedulerName"] == "volcano"
    assert template["metadata"]["annotations"][volcano.GROUP_NAME_ANNOTATION] == "ray-job-pg"
    assert template["metadata"]["annotations"][volcano.TASK_SPEC_ANNOTATION] == "submittergroup"
    assert template["metadata"]["labels"][volcano.QUEUE_LABEL] == "test-queue"


async def test_yunikorn_labels_and_task_groups(client: Client, start: Any) -> None:
    ns = await start("yunikorn")
    labels = {
        "yunikorn.apache.org/app-id": "app-1",
        "yunikorn.apache.org/queue": "root.ray",
        "ray.io/gang-scheduling-enabled": "true",
    }
    await client.create(C.RAYCLUSTERS, raycluster("yk", ns, labels), ns)
    groups = by_group(await head_and_workers(client, ns, "yk", 2))
    want_groups = [
        {"minResource": {"cpu": "256m", "memory": "256Mi"}, "name": "headgroup", "minMember": 1},
        {
            "minResource": {"cpu": "256m", "memory": "256Mi", "nvidia.com/gpu": "1"},
            "name": "workers",
            "minMember": 1,
        },
    ]
    for group, members in groups.items():
        for pod in members:
            meta = pod["metadata"]
            assert pod["spec"]["schedulerName"] == "yunikorn"
            assert meta["labels"]["applicationId"] == "app-1"
            assert meta["labels"]["queue"] == "root.ray"
            assert json.loads(meta["annotations"]["yunikorn.apache.org/task-groups"]) == want_groups
            assert meta["annotations"]["yunikorn.apache.org/task-group-name"] == group


async def test_kai_queue_label_and_k8sjobmode_refused(client: Client, start: Any) -> None:
    ns = await start("kai-scheduler")
    await client.create(C.RAYCLUSTERS, raycluster("kai", ns, {"kai.scheduler/queue": "team-a"}), ns)
    for pod in await head_and_workers(client, ns, "kai", 2):
        assert pod["spec"]["schedulerName"] == "kai-scheduler"
        assert pod["metadata"]["labels"]["kai.scheduler/queue"] == "team-a"

    # KubeRay's KAI refuses a K8sJobMode RayJob on submission: it never gets a RayCluster, while a
    # SidecarMode one does, with its Pods on KAI.
    await client.create(C.RAYJOBS, rayjob("refused", ns, {"kai.scheduler/queue": "team-a"}), ns)
    await client.create(
        C.RAYJOBS, rayjob("sidecar", ns, {"kai.scheduler/queue": "team-a"}, "SidecarMode"), ns
    )

    async def sidecar_cluster() -> str | None:
        got = await client.get(C.RAYJOBS, "sidecar", ns)
        name = (got.get("status") or {}).get("rayClusterName")
        return str(name) if name and await get_or_none(client, C.RAYCLUSTERS, str(name), ns) else None

    name = await eventually(sidecar_cluster, "the SidecarMode RayJob's RayCluster")
    for pod in await head_and_workers(client, ns, name, 2):
        assert pod["spec"]["schedulerName"] == "kai-scheduler"
    refused = await client.get(C.RAYJOBS, "refused", ns)
    clusters = (await client.list(C.RAYCLUSTERS, ns))["items"]
    origin = [
        c
        for c in clusters
        if c["metadata"]["labels"].get(C.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY) == "refused"
    ]
    assert origin == [], f"KAI must refuse the K8sJobMode RayJob (status {refused.get('status')})"


async def test_scheduler_plugins_podgroup_for_gang_clusters(client: Client, start: Any) -> None:
    ns = await start("scheduler-plugins")
    created = await client.create(
        C.RAYCLUSTERS, raycluster("gang", ns, {"ray.io/gang-scheduling-enabled": "true"}), ns
    )
    await client.create(C.RAYCLUSTERS, raycluster("plain", ns), ns)
    pg = await eventually(lambda: get_or_none(client, sp.PODGROUPS, "gang", ns), "the PodGroup")
    assert pg["spec"] == {
        "minMember": 3,
        "minResources": {"cpu": "768m", "memory": "768Mi", "nvidia.com/gpu": "2"},
    }
    assert pg["metadata"]["ownerReferences"] == [
        {"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "gang", "uid": created["metadata"]["uid"]}
    ]
    for pod in await head_and_workers(client, ns, "gang", 2):
        assert pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
        assert pod["metadata"]["labels"][sp.POD_GROUP_LABEL] == "gang"
    for pod in await head_and_workers(client, ns, "plain", 2):
        assert pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
        assert sp.POD_GROUP_LABEL not in pod["metadata"]["labels"]
    assert await get_or_none(client, sp.PODGROUPS, "plain", ns) is None


async def test_no_batch_scheduler_writes_nothing_of_theirs(client: Client, start: Any) -> None:
    ns = await start("")
    await client.create(C.RAYCLUSTERS, raycluster("none", ns, dict(QUEUE)), ns)
    for pod in await head_and_workers(client, ns, "none", 2):
        assert pod["spec"].get("schedulerName") in (None, "default-scheduler")
        assert volcano.GROUP_NAME_ANNOTATION not in (pod["metadata"].get("annotations") or {})
    assert (await client.list(volcano.PODGROUPS, ns))["items"] == []


@pytest.mark.parametrize("name", ["volcano", "yunikorn", "kai-scheduler", "scheduler-plugins"])
def test_from_options_names(name: str) -> None:
    scheduler = from_options(False, name, submitter_pod_spec=submitter_pod_spec)
    assert scheduler is not None and scheduler.plugin == name


def test_from_options_legacy_flag_and_unknown_name() -> None:
    assert from_options(False, "", submitter_pod_spec=submitter_pod_spec) is None
    legacy = from_options(True, "", submitter_pod_spec=submitter_pod_spec)
    assert legacy is not None and legacy.plugin == "volcano"
    with pytest.raises(ValueError, match="the scheduler is not supported, name=slurm"):
        from_options(False, "slurm", submitter_pod_spec=submitter_pod_spec)


async def test_volcano_rayjob_suspend_shrinks_its_podgroup(client: Client, start: Any) -> None:
    """CleanupOnCompletion on suspend: the cluster is gone, so the PodGroup keeps no members and
    no resources (KubeRay updates it with empty ones), with a BatchSchedulerCleanedUp event."""
    ns = await start("volcano")
    doc = rayjob("susp", ns, dict(QUEUE))
    doc["spec"]["shutdownAfterJobFinishes"] = True  # KubeRay allows suspending only such RayJobs
    await client.create(C.RAYJOBS, doc, ns)
    await eventually(lambda: get_or_none(client, volcano.PODGROUPS, "ray-susp-pg", ns), "the RayJob PodGroup")

    async def has_cluster() -> bool:
        got = await client.get(C.RAYJOBS, "susp", ns)
        name = (got.get("status") or {}).get("rayClusterName")
        return bool(name and await get_or_none(client, C.RAYCLUSTERS, str(name), ns))

    await eventually(has_cluster, "the RayJob's RayCluster")
    await update_live(client, C.RAYJOBS, "susp", ns, lambda o: o["spec"].update(suspend=True))

    async def shrunk() -> dict[str, Any] | None:
        pg = await client.get(volcano.PODGROUPS, "ray-susp-pg", ns)
        return pg if pg["spec"].get("minResources") == {} else None

    pg = await eventually(shrunk, "the PodGroup emptied")
    assert "minMember" not in pg["spec"]
    assert pg["spec"]["queue"] == "test-queue"

    async def cleaned_event() -> bool:
        events = (await client.list(EVENTS, ns))["items"]
        return any(e.get("reason") == "BatchSchedulerCleanedUp" for e in events)

    await eventually(cleaned_event, "the BatchSchedulerCleanedUp event")
