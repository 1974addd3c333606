"""KubeRay's RayJob envtest/e2e scenarios (docs/reference/rayjob.md §8) on the simulator with fake Ray heads.

Every assertion reads the API server (RayJob status, children, events) or the fake head's job
table (how many times a Ray job was submitted); waits are bounded polls of the API.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from controllers.constants import RAYCLUSTERS, RAYJOBS
from controllers.raysim import RayPodRuntime
from kuberay_py.client.resources import EVENTS, JOBS, SERVICES
from kuberay_py.envtest import Environment
from tests.rayjob_harness import JobOperator, JobScenario, job_environment, rayjob


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def shared() -> AsyncIterator[tuple[Environment, RayPodRuntime, JobOperator]]:
    async with job_environment() as item:
        yield item


@pytest_asyncio.fixture(loop_scope="session")
async def sc(shared: tuple[Environment, RayPodRuntime, JobOperator]) -> AsyncIterator[JobScenario]:
    env, runtime, op = shared
    client = env.new_client()
    ns = await env.create_namespace()
    try:
        yield JobScenario(env, client, ns, runtime, op)
    finally:
        await env.delete_namespace(ns)
        await client.close()


async def test_k8s_job_mode_succeeds_and_shutdown_deletes_the_cluster(sc: JobScenario) -> None:
    await sc.create(
        rayjob("k8s", "echo hello && sleep 1", shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=1)
    )
    running = await sc.until("k8s", {"jobDeploymentStatus": "Running"})
    st = running["status"]
    cluster = st["rayClusterName"]
    assert cluster.startswith("k8s-") and len(cluster) == len("k8s-") + 5
    assert st["jobId"].startswith("k8s-") and st["startTime"]
    assert st["dashboardURL"] == f"{cluster}-head-svc.{sc.namespace}.svc.cluster.local:8265"
    assert "k8s" in [j["metadata"]["name"] for j in (await sc.client.list(JOBS, sc.namespace))["items"]]
    done = await sc.until("k8s", {"jobDeploymentStatus": "Complete"})
    st = done["status"]
    assert (st["jobStatus"], st["succeeded"], st["failed"]) == ("SUCCEEDED", 1, 0)
    assert st["endTime"] and st["rayJobInfo"]["startTime"] and st["rayJobInfo"]["endTime"]
    assert sc.jobs_of(cluster).submissions == 1
    submitter = await sc.client.get(JOBS, "k8s", sc.namespace)
    assert any(c["type"] == "Complete" for c in submitter["status"]["conditions"])
    assert submitter["metadata"]["labels"]["app.kubernetes.io/created-by"] == "kuberay-operator"
    svc = await sc.client.get(SERVICES, "k8s-head-svc", sc.namespace)
    assert svc["spec"]["selector"]["ray.io/cluster"] == cluster
    await sc.gone(RAYCLUSTERS, cluster)
    await sc.client.get(JOBS, "k8s", sc.namespace)  # the submitter Job is kept for its logs
    job = await sc.get("k8s")
    assert job["status"]["jobDeploymentStatus"] == "Complete"
    assert "ray.io/rayjob-finalizer" in job["metadata"]["finalizers"]


async def test_http_mode_submits_once_without_a_submitter(sc: JobScenario) -> None:
    await sc.create(rayjob("http", "sleep 1", submissionMode="HTTPMode"))
    done = await sc.until("http", {"jobDeploymentStatus": "Complete"})
    assert done["status"]["jobStatus"] == "SUCCEEDED"
    assert sc.jobs_of(done["status"]["rayClusterName"]).submissions == 1
    assert (await sc.client.list(JOBS, sc.namespace))["items"] == []


async def test_interactive_mode_waits_for_the_users_job_id(sc: JobScenario) -> None:
    await sc.create(rayjob("inter", submissionMode="InteractiveMode"))
    waiting = await sc.until("inter", {"jobDeploymentStatus": "Waiting"})
    cluster = waiting["status"]["rayClusterName"]
    assert not waiting["status"].get("jobId")
    table = sc.jobs_of(cluster)
    table.submit({"entrypoint": "sleep 1", "submission_id": "by-hand"})
    await sc.patch_spec("inter", {"jobId": "by-hand"})
    done = await sc.until("inter", {"jobDeploymentStatus": "Complete"})
    assert done["status"]["jobId"] == "by-hand" and done["status"]["jobStatus"] == "SUCCEEDED"


async def test_failing_entrypoint_is_retried_on_a_new_cluster(sc: JobScenario) -> None:
    await sc.create(rayjob("retry", "exit 1", submissionMode="HTTPMode", backoffLimit=1))
    failed = await sc.until("retry", {"jobDeploymentStatus": "Failed"})
    st = failed["status"]
    assert (st["failed"], st["succeeded"], st["reason"], st["jobStatus"]) == (2, 0, "AppFailed", "FAILED")
    assert "exit code 1" in st["message"]
    assert await sc.clusters() == [st["rayClusterName"]], "the first attempt's cluster was deleted"


async def test_active_deadline_fails_the_job_and_stops_ray(sc: JobScenario) -> None:
    await sc.create(rayjob("deadline", "sleep 300", submissionMode="HTTPMode", activeDeadlineSeconds=3))
    running = await sc.until("deadline", {"jobStatus": "RUNNING"})
    cluster = running["status"]["rayClusterName"]
    failed = await sc.until("deadline", {"jobDeploymentStatus": "Failed"})
    assert failed["status"]["reason"] == "DeadlineExceeded"
    assert "ActiveDeadlineSeconds: 3" in failed["status"]["message"]
    assert failed["status"]["failed"] == 1
    table = sc.jobs_of(cluster)
    assert table.jobs[failed["status"]["jobId"]].status(table.clock.now()) == "STOPPED"


async def test_suspend_then_resume(sc: JobScenario) -> None:
    await sc.create(rayjob("susp", submissionMode="HTTPMode", suspend=True, shutdownAfterJobFinishes=True))
    await sc.until("susp", {"jobDeploymentStatus": "Suspended"})
    assert await sc.clusters() == []
    await sc.patch_spec("susp", {"suspend": False})
    done = await sc.until("susp", {"jobDeploymentStatus": "Complete"})
    assert done["status"]["jobStatus"] == "SUCCEEDED"


async def test_cluster_selector_uses_an_existing_cluster(sc: JobScenario) -> None:
    template = rayjob("x")["spec"]["rayClusterSpec"]
    await sc.client.create(
        RAYCLUSTERS,
        {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "shared"}, "spec": template},
        sc.namespace,
    )
    doc = rayjob("sel", submissionMode="HTTPMode", clusterSelector={"ray.io/cluster": "shared"})
    del doc["spec"]["rayClusterSpec"]
    await sc.create(doc)
    done = await sc.until("sel", {"jobDeploymentStatus": "Complete"})
    assert done["status"]["rayClusterName"] == "shared"
    assert await sc.clusters() == ["shared"]
    assert sc.jobs_of("shared").submissions == 1


async def test_deletion_rules_delete_the_cluster_then_the_rayjob(sc: JobScenario) -> None:
    rules = [
        {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 0}},
        {"policy": "DeleteSelf", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 2}},
    ]
    await sc.create(rayjob("rules", submissionMode="HTTPMode", deletionStrategy={"deletionRules": rules}))
    done = await sc.until("rules", {"jobDeploymentStatus": "Complete"})
    await sc.gone(RAYCLUSTERS, done["status"]["rayClusterName"])
    await sc.gone(RAYJOBS, "rules")


async def test_validation_failed_recovers_once_the_spec_is_fixed(sc: JobScenario) -> None:
    await sc.create(rayjob("fixme", submissionMode="HTTPMode", ttlSecondsAfterFinished=5))
    bad = await sc.until("fixme", {"jobDeploymentStatus": "ValidationFailed"})
    assert "cannot have TTLSecondsAfterFinished" in bad["status"]["message"]
    events = (await sc.client.list(EVENTS, sc.namespace))["items"]
    assert any(e.get("reason") == "InvalidRayJobSpec" for e in events)
    await sc.patch_spec("fixme", {"shutdownAfterJobFinishes": True})
    await sc.until("fixme", {"jobDeploymentStatus": "Complete"})


async def test_sidecar_mode_submits_from_the_head_pod(sc: JobScenario) -> None:
    # Long enough for the head to turn Ready first: a finished sidecar makes the head Pod unready.
    await sc.create(rayjob("side", "sleep 5", submissionMode="SidecarMode"))
    done = await sc.until("side", {"jobDeploymentStatus": "Complete"})
    st = done["status"]
    assert st["jobStatus"] == "SUCCEEDED"
    assert sc.jobs_of(st["rayClusterName"]).submissions == 1
    assert (await sc.client.list(JOBS, sc.namespace))["items"] == []
    cluster = await sc.client.get(RAYCLUSTERS, st["rayClusterName"], sc.namespace)
    head = cluster["spec"]["headGroupSpec"]["template"]["spec"]
    assert head["restartPolicy"] == "Never"
    assert [c["name"] for c in head["containers"]][-1] == "ray-job-submitter"
    assert cluster["metadata"]["annotations"]["ray.io/disable-provisioned-head-restart"] == "true"


async def test_k8s_job_mode_failure_is_retried_with_a_new_submitter(sc: JobScenario) -> None:
    await sc.create(rayjob("k8sfail", "sleep 1 && exit 3", backoffLimit=1))
    failed = await sc.until("k8sfail", {"jobDeploymentStatus": "Failed"})
    st = failed["status"]
    assert (st["failed"], st["reason"], st["jobStatus"]) == (2, "AppFailed", "FAILED")
    # The retry deleted the first attempt's cluster and submitter; the second ran to the end.
    assert await sc.clusters() == [st["rayClusterName"]]
    submitter = await sc.client.get(JOBS, "k8sfail", sc.namespace)
    assert any(c["type"] == "Complete" for c in submitter["status"]["conditions"])
    assert sc.jobs_of(st["rayClusterName"]).submissions == 1
