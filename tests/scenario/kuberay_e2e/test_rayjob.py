"""Mirrors of KubeRay v1.7.0 ``test/e2erayjob``: TestRayJob's subtests, TestRayJobSuspend,
TestRayJobWithClusterSelector and TestRayJobRetry (see conftest.py for what differs and why)."""

from __future__ import annotations

import asyncio
import contextlib
import re
from datetime import UTC, datetime
from typing import Any

import pytest

from controllers.constants import RAYCLUSTERS, RAYJOBS
from kuberay_py.client import ApiError, NotFound
from kuberay_py.client.resources import JOBS, PODS, SERVICES
from kuberay_py.clock import format_rfc3339
from tests.live import update_live

from .conftest import (
    COUNTER_RUNTIME_ENV,
    E2E,
    SCRIPTS,
    e2e_rayjob,
    eventually,
    ray_cluster_spec,
    state_is,
    submitter_template,
)
from .rayjob_steps import (
    counter_job,
    delete_with_cluster,
    entrypoint_resources_job,
    failed_keeping_cluster,
    no_jobs,
    retried_app_failures,
    stop_running_job,
    submitter_pods,
    until_app_failed,
    until_retries_exhausted,
    until_succeeded,
    until_terminal,
    verify_auth_env,
    verify_auth_on_cluster,
    with_token_auth,
)

# --- TestRayJob ----------------------------------------------------------------------------------


async def test_ray_job__successful_ray_job(e2e: E2E) -> None:
    """rayjob_test.go:TestRayJob/"Successful RayJob"."""
    sc = e2e
    await sc.create(counter_job("counter", shutdownAfterJobFinishes=True))
    await eventually(lambda: sc.client.get(SERVICES, "counter-head-svc", sc.namespace), "head service")
    done = await until_succeeded(sc, "counter")
    info = done["status"]["rayJobInfo"]
    assert info["startTime"] and info["endTime"]
    await sc.gone(RAYCLUSTERS, done["status"]["rayClusterName"])
    assert await sc.jobs(), "the submitter Job is kept"
    # suspend on a finished RayJob changes nothing
    await sc.patch_spec("counter", {"suspend": True})
    await sc.barrier("counter")
    assert (await sc.get("counter"))["status"]["jobDeploymentStatus"] == "Complete"
    await sc.client.delete(RAYJOBS, "counter", sc.namespace)


async def test_ray_job__failing_ray_job_without_cluster_shutdown_after_finished(e2e: E2E) -> None:
    """rayjob_test.go:TestRayJob/"Failing RayJob without cluster shutdown after finished"."""
    sc = e2e
    await sc.create(
        e2e_rayjob(
            "fail", SCRIPTS["fail"], shutdownAfterJobFinishes=False, submitterPodTemplate=submitter_template()
        )
    )
    failed = await until_app_failed(sc, "fail")
    cluster = failed["status"]["rayClusterName"]
    await delete_with_cluster(sc, "fail", cluster)
    await eventually(lambda: no_jobs(sc), "the submitter Job cascade-deleted")


def _failing_submitter(name: str, **spec: Any) -> dict[str, Any]:
    doc = e2e_rayjob(
        name,
        "The command will be overridden by the submitter Job",
        shutdownAfterJobFinishes=True,
        submitterPodTemplate=submitter_template(),
        **spec,
    )
    container = doc["spec"]["submitterPodTemplate"]["spec"]["containers"][0]
    container["command"] = ["ray", "job", "submit", "--address", "http://do-not-exist:8265", "--", "echo 123"]
    return doc


async def test_ray_job__failing_submitter_k8s_job(e2e: E2E) -> None:
    """rayjob_test.go:TestRayJob/"Failing submitter K8s Job": the submitter cannot reach any
    dashboard, its Job hits its backoff limit, the RayJob fails with SubmissionFailed."""
    sc = e2e
    await sc.create(_failing_submitter("fail-k8s-job"))
    failed = await sc.until("fail-k8s-job", {"jobDeploymentStatus": "Failed"}, timeout=90)
    assert failed["status"].get("jobStatus", "") == ""
    assert failed["status"]["reason"] == "SubmissionFailed"
    await sc.gone(RAYCLUSTERS, failed["status"]["rayClusterName"])
    assert await sc.jobs(), "the submitter Job is not deleted yet"
    await sc.client.delete(RAYJOBS, "fail-k8s-job", sc.namespace)


async def test_ray_job__should_transition_to_complete_if_the_ray_job_has_stopped(e2e: E2E) -> None:
    """rayjob_test.go:TestRayJob/"Should transition to 'Complete' if the Ray job has stopped.":
    stop.py stops its own job through the dashboard once it runs; here the test does the stop."""
    sc = e2e
    await sc.create(e2e_rayjob("stop", SCRIPTS["stop"], submitterPodTemplate=submitter_template()))
    await stop_running_job(sc, "stop")


async def test_ray_job__runtime_env_yaml_is_not_a_valid_yaml_string(e2e: E2E) -> None:
    """rayjob_test.go:TestRayJob/"RuntimeEnvYAML is not a valid YAML string"."""
    sc = e2e
    await sc.create(e2e_rayjob("invalid-yamlstr", SCRIPTS["counter"], runtimeEnvYAML="invalid_yaml_string"))
    await sc.until("invalid-yamlstr", {"jobDeploymentStatus": "ValidationFailed"})


async def test_ray_job__ray_job_name_too_long_with_48_characters(e2e: E2E) -> None:
    """rayjob_test.go:TestRayJob/"RayJob name too long with 48 characters"."""
    sc = e2e
    await sc.create(e2e_rayjob("a" * 48, SCRIPTS["counter"]))
    await sc.until("a" * 48, {"jobDeploymentStatus": "ValidationFailed"})


async def test_ray_job__ray_job_has_passed_active_deadline_seconds(e2e: E2E) -> None:
    """rayjob_test.go:TestRayJob/"RayJob has passed ActiveDeadlineSeconds" (5 s, on the clock)."""
    sc = e2e
    await sc.create(
        e2e_rayjob(
            "long-running",
            SCRIPTS["long_running"],
            shutdownAfterJobFinishes=True,
            ttlSecondsAfterFinished=600,
            activeDeadlineSeconds=5,
            submitterPodTemplate=submitter_template(),
        )
    )
    await sc.until("long-running", {"jobStatus": "RUNNING"})
    await sc.advance(4, "long-running")
    assert (await sc.get("long-running"))["status"]["jobDeploymentStatus"] == "Running"
    await sc.advance(2, "long-running")
    failed = await sc.until("long-running", {"jobDeploymentStatus": "Failed"})
    assert failed["status"]["reason"] == "DeadlineExceeded"


async def test_ray_job__ray_job_controller_recreates_the_head_pod_if_it_is_deleted_while_the_job_is_running(
    e2e: E2E,
) -> None:
    """rayjob_test.go:TestRayJob/"RayJob controller recreates the head Pod if it is deleted while
    the job is running" (``time.sleep(60)`` is ``sleep 60`` for the fake head)."""
    sc = e2e
    await sc.create(
        e2e_rayjob(
            "delete-head-after-submit",
            "sleep 60",
            submitterConfig={"backoffLimit": 0},
            shutdownAfterJobFinishes=True,
        )
    )
    running = await sc.until("delete-head-after-submit", {"jobStatus": "RUNNING"})
    name = running["status"]["rayClusterName"]
    cluster = await sc.cluster(name)
    assert cluster["metadata"]["labels"]["ray.io/job-submission-mode"] == "K8sJobMode"
    assert (cluster["metadata"].get("annotations") or {}).get(
        "ray.io/disable-provisioned-head-restart", ""
    ) == ""
    listed = await sc.client.list(
        PODS, sc.namespace, label_selector=f"ray.io/cluster={name},ray.io/node-type=head"
    )
    (head,) = listed["items"]
    # Watched, not polled: the failed job's shutdown may delete the new head moments later.
    watch = sc.client.watch(
        PODS,
        sc.namespace,
        resource_version=listed["metadata"]["resourceVersion"],
        label_selector=f"ray.io/cluster={name},ray.io/node-type=head",
    )
    await sc.client.delete(PODS, head["metadata"]["name"], sc.namespace)

    async def new_head() -> str:
        async with contextlib.aclosing(watch) as events:
            async for event in events:
                if event["type"] != "ADDED":  # BOOKMARKs carry no name
                    continue
                pod_name = event["object"]["metadata"]["name"]
                if pod_name != head["metadata"]["name"]:
                    return str(pod_name)
        return ""

    assert await asyncio.wait_for(new_head(), 60)
    failed = await sc.until("delete-head-after-submit", {"jobDeploymentStatus": "Failed"}, timeout=90)
    assert failed["status"]["reason"] in (
        "AppFailed",
        "JobDeploymentStatusTransitionGracePeriodExceeded",
        "SubmissionFailed",
    )
    await sc.client.delete(RAYJOBS, "delete-head-after-submit", sc.namespace)


async def test_ray_job__ray_job_should_be_created_but_not_updated_when_managed_externally(e2e: E2E) -> None:
    """rayjob_test.go:TestRayJob/"RayJob should be created, but not updated when managed externally"."""
    sc = e2e
    doc = counter_job(
        "managed-externally", shutdownAfterJobFinishes=True, managedBy="kueue.x-k8s.io/multikueue"
    )
    await sc.create(doc)
    with pytest.raises(ApiError):  # managedBy is immutable
        await sc.patch_spec("managed-externally", {"managedBy": "ray.io/kuberay-operator"})
    job = await sc.get("managed-externally")
    assert job["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    await sc.barrier("managed-externally")
    job = await sc.get("managed-externally")
    assert (job.get("status") or {}).get("jobDeploymentStatus", "") == ""
    assert not [n for n in await sc.clusters() if n.endswith("managed-externally")]
    assert await no_jobs(sc)
    await sc.client.delete(RAYJOBS, "managed-externally", sc.namespace)


async def test_ray_job__ray_job_has_exceed_submitter_finished_timeout(e2e: E2E) -> None:
    """rayjob_test.go:TestRayJob/"RayJob has exceed SubmitterFinishedTimeout": the test marks the
    submitter Job Complete while Ray's job still runs; 30 s later (on the clock) the RayJob fails."""
    sc = e2e
    name = "submitter-timeout"
    await sc.create(
        e2e_rayjob(
            name,
            SCRIPTS["long_running"],
            shutdownAfterJobFinishes=True,
            submitterPodTemplate=submitter_template(),
        )
    )
    await sc.until(name, {"jobDeploymentStatus": "Running"})
    await sc.until(name, {"jobStatus": "RUNNING"})
    assert await sc.jobs()
    # The Job's startTime is real time; the completion the test writes is "now" on the operator's
    # clock, which therefore first catches up with the wall clock.
    await sc.clock.advance(max(0.0, (datetime.now(UTC) - sc.clock.utcnow()).total_seconds() + 1))
    now = format_rfc3339(sc.clock.utcnow())

    def complete(job: dict[str, Any]) -> None:
        status = job.setdefault("status", {})
        status["active"] = 0
        status.pop("ready", None)
        status["conditions"] = [
            *(status.get("conditions") or []),
            {
                "type": "SuccessCriteriaMet",
                "status": "True",
                "lastProbeTime": now,
                "lastTransitionTime": now,
                "reason": "SuccessCriteriaMet",
                "message": "Job success criteria met for timeout test",
            },
            {
                "type": "Complete",
                "status": "True",
                "lastProbeTime": now,
                "lastTransitionTime": now,
                "reason": "Completed",
                "message": "Job completed successfully for timeout test",
            },
        ]
        status["completionTime"] = now
        status["succeeded"] = 1

    await update_live(sc.client, JOBS, name, sc.namespace, complete, status=True)
    await sc.advance(28, name)
    assert (await sc.get(name))["status"]["jobDeploymentStatus"] == "Running"
    await sc.advance(3, name)
    failed = await sc.until(name, {"jobDeploymentStatus": "Failed"})
    assert failed["status"]["reason"] == "JobDeploymentStatusTransitionGracePeriodExceeded"
    assert re.match(
        r"The RayJob submitter finished at .* but the ray job did not reach terminal state within .*",
        failed["status"]["message"],
    )


async def test_ray_job__ray_cluster_status_update_propagates_to_ray_job(e2e: E2E) -> None:
    """rayjob_test.go:TestRayJob/"RayCluster status update propagates to RayJob"."""
    sc = e2e
    name = "cluster-status-update"
    await sc.create(
        e2e_rayjob(
            name,
            SCRIPTS["long_running"],
            shutdownAfterJobFinishes=False,
            submitterPodTemplate=submitter_template(),
        )
    )
    running = await sc.until(name, {"jobStatus": "RUNNING"})
    cluster = await sc.cluster(running["status"]["rayClusterName"])
    original = cluster["status"]["maxWorkerReplicas"]

    async def mirrored(value: int) -> bool:
        job = await sc.get(name)
        return bool(job["status"]["rayClusterStatus"].get("maxWorkerReplicas") == value)

    await eventually(lambda: mirrored(original), "the RayJob mirrors maxWorkerReplicas")

    def bump(obj: dict[str, Any]) -> None:
        obj["status"]["maxWorkerReplicas"] = original + 2

    await update_live(sc.client, RAYCLUSTERS, cluster["metadata"]["name"], sc.namespace, bump, status=True)
    await eventually(lambda: mirrored(original + 2), "the RayJob sees the new maxWorkerReplicas")
    await sc.client.delete(RAYJOBS, name, sc.namespace)


async def test_ray_job__successful_ray_job_in_k8s_job_mode_with_auth_token(e2e: E2E) -> None:
    """rayjob_test.go:TestRayJob/"Successful RayJob in K8s Job mode with auth token"."""
    sc = e2e
    name = "counter-auth"
    await sc.create(
        with_token_auth(counter_job(name, submissionMode="K8sJobMode", shutdownAfterJobFinishes=True))
    )
    cluster, _ = await verify_auth_on_cluster(sc, name)
    await eventually(lambda: sc.client.get(JOBS, name, sc.namespace), "submitter Job")
    (submitter, *_) = await eventually(lambda: submitter_pods(sc, name), "submitter Pod")
    verify_auth_env(submitter["spec"]["containers"][0], cluster)
    await until_succeeded(sc, name)


async def test_ray_job__ray_job_pre_running_deadline_seconds_expires_during_initializing_state(
    e2e: E2E,
) -> None:
    """rayjob_test.go:TestRayJob/"RayJob PreRunningDeadlineSeconds expires during Initializing
    state". KubeRay keeps the cluster from ever becoming Ready with an image that cannot be
    pulled; the simulated kubelet pulls any image, so here the head asks for more CPU than any
    node has and stays Pending (same effect: the RayJob never leaves Initializing)."""
    sc = e2e
    name = "ttl-initializing"
    doc = e2e_rayjob(name, shutdownAfterJobFinishes=True, preRunningDeadlineSeconds=5)
    head = doc["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["image"] = "invalid-image-does-not-exist:v1.0.0"
    head["resources"] = {"requests": {"cpu": "1000"}, "limits": {"cpu": "1000"}}
    await sc.create(doc)
    await sc.until(name, {"jobDeploymentStatus": "Initializing"})
    await sc.advance(6, name)
    failed = await sc.until(name, {"jobDeploymentStatus": "Failed"})
    assert failed["status"]["reason"] == "PreRunningDeadlineExceeded"


async def test_ray_job__ray_job_pre_running_deadline_seconds_expires_during_waiting_state(e2e: E2E) -> None:
    """rayjob_test.go:TestRayJob/"RayJob PreRunningDeadlineSeconds expires during Waiting state"."""
    sc = e2e
    name = "ttl-waiting"
    await sc.create(
        e2e_rayjob(
            name,
            submissionMode="InteractiveMode",
            shutdownAfterJobFinishes=True,
            preRunningDeadlineSeconds=60,
        )
    )
    await sc.until(name, {"jobDeploymentStatus": "Waiting"})
    await sc.advance(61, name)
    failed = await sc.until(name, {"jobDeploymentStatus": "Failed"})
    assert failed["status"]["reason"] == "PreRunningDeadlineExceeded"


# --- TestRayJobSuspend ---------------------------------------------------------------------------


async def test_ray_job_suspend__suspend_the_ray_job_when_its_status_is_running_and_then_resume_it(
    e2e: E2E,
) -> None:
    """rayjob_suspend_test.go:TestRayJobSuspend/"Suspend the RayJob when its status is 'Running',
    and then resume it."."""
    sc = e2e
    name = "long-running"
    await sc.create(
        e2e_rayjob(
            name,
            SCRIPTS["long_running"],
            shutdownAfterJobFinishes=True,
            ttlSecondsAfterFinished=600,
            submitterPodTemplate=submitter_template(),
        )
    )
    running = await sc.until(name, {"jobDeploymentStatus": "Running"})
    await sc.patch_spec(name, {"suspend": True})
    await sc.until(name, {"jobDeploymentStatus": "Suspended"})
    with pytest.raises(NotFound):
        await sc.cluster(running["status"]["rayClusterName"])
    await eventually(lambda: no_jobs(sc), "the submitter Job deleted")
    await sc.patch_spec(name, {"suspend": False})
    await sc.until(name, {"jobDeploymentStatus": "Running"})
    await sc.client.delete(RAYJOBS, name, sc.namespace)


async def test_ray_job_suspend__create_a_suspended_ray_job_and_then_resume_it(e2e: E2E) -> None:
    """rayjob_suspend_test.go:TestRayJobSuspend/"Create a suspended RayJob, and then resume it."."""
    sc = e2e
    await sc.create(counter_job("counter", suspend=True, shutdownAfterJobFinishes=True))
    await sc.until("counter", {"jobDeploymentStatus": "Suspended"})
    await sc.patch_spec("counter", {"suspend": False})
    done = await sc.until("counter", {"jobDeploymentStatus": "Complete"})
    assert done["status"]["jobStatus"] == "SUCCEEDED"
    cluster = done["status"]["rayClusterName"]
    await delete_with_cluster(sc, "counter", cluster)

    async def no_pods() -> bool:
        return not await sc.pods(cluster)

    await eventually(no_pods, "the cluster's Pods cascade-deleted")


# --- TestRayJobWithClusterSelector ---------------------------------------------------------------


async def test_ray_job_with_cluster_selector(e2e: E2E) -> None:
    """rayjob_cluster_selector_test.go:TestRayJobWithClusterSelector, its four subtests against
    one RayCluster (they run in parallel in Go; here they are created together)."""
    sc = e2e
    await sc.client.create(
        RAYCLUSTERS,
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {"name": "raycluster"},
            "spec": ray_cluster_spec(),
        },
        sc.namespace,
    )
    await sc.until_cluster("raycluster", state_is("ready"), "Ready")
    selector = {"ray.io/cluster": "raycluster"}

    def selecting(name: str, entrypoint: str, **spec: Any) -> dict[str, Any]:
        doc = e2e_rayjob(
            name, entrypoint, clusterSelector=selector, submitterPodTemplate=submitter_template(), **spec
        )
        del doc["spec"]["rayClusterSpec"]
        return doc

    await sc.create(selecting("counter", SCRIPTS["counter"], runtimeEnvYAML=COUNTER_RUNTIME_ENV))
    await sc.create(selecting("fail", SCRIPTS["fail"], shutdownAfterJobFinishes=False))
    await sc.create(
        selecting(
            "managed-externally",
            SCRIPTS["counter"],
            runtimeEnvYAML=COUNTER_RUNTIME_ENV,
            managedBy="kueue.x-k8s.io/multikueue",
        )
    )
    with pytest.raises(ApiError) as invalid:
        await sc.create(
            selecting("managed-externally-invalid", SCRIPTS["counter"], managedBy="invalid.com/controller")
        )
    assert invalid.value.status == 422
    ok = await until_succeeded(sc, "counter")
    # What counter.py checks inside Ray: the runtime env reached the job (through the submitter's
    # --runtime-env-json), and its output is in the driver log.
    table = sc.jobs_of("raycluster")
    ran = table.jobs[ok["status"]["jobId"]]
    assert ran.runtime_env == {"env_vars": {"counter_name": "test_counter"}}
    assert "test_counter got 5" in ran.logs(table.clock.now())
    bad = await until_terminal(sc, "fail")
    assert bad["status"]["jobStatus"] == "FAILED"
    await sc.barrier("managed-externally")
    managed = await sc.get("managed-externally")
    assert (managed.get("status") or {}).get("jobDeploymentStatus", "") == ""


# --- TestRayJobRetry -----------------------------------------------------------------------------


async def test_ray_job_retry__failing_ray_job_without_cluster_shutdown_after_finished(e2e: E2E) -> None:
    """rayjob_retry_test.go:TestRayJobRetry/"Failing RayJob without cluster shutdown after finished"."""
    sc = e2e
    await sc.create(
        e2e_rayjob(
            "fail",
            SCRIPTS["fail"],
            backoffLimit=2,
            submitterConfig={"backoffLimit": 1},
            shutdownAfterJobFinishes=False,
            submitterPodTemplate=submitter_template(),
        )
    )
    st = await until_retries_exhausted(sc, "fail")
    job = await sc.client.get(JOBS, "fail", sc.namespace)
    assert job["spec"]["backoffLimit"] == 1
    assert job["status"].get("failed", 0) == 0  # Ray's failure is not the submitter's
    assert job["status"]["succeeded"] == 1
    await delete_with_cluster(sc, "fail", st["rayClusterName"])
    await eventually(lambda: no_jobs(sc), "the submitter Job cascade-deleted")


async def test_ray_job_retry__ray_job_has_passed_active_deadline_seconds(e2e: E2E) -> None:
    """rayjob_retry_test.go:TestRayJobRetry/"RayJob has passed ActiveDeadlineSeconds": a deadline
    is final, backoffLimit does not retry it."""
    sc = e2e
    name = "long-running"
    await sc.create(
        e2e_rayjob(
            name,
            SCRIPTS["long_running"],
            backoffLimit=2,
            submitterConfig={"backoffLimit": 0},
            shutdownAfterJobFinishes=True,
            ttlSecondsAfterFinished=600,
            activeDeadlineSeconds=5,
            submitterPodTemplate=submitter_template(),
        )
    )
    await sc.until(name, {"jobStatus": "RUNNING"})
    await sc.advance(6, name)
    failed = await sc.until(name, {"jobDeploymentStatus": "Failed"})
    st = failed["status"]
    assert (st["reason"], st["failed"], st.get("succeeded", 0)) == ("DeadlineExceeded", 1, 0)


# Two TestRayJobRetry subtests outside issue 18's selection (same file in KubeRay); the SidecarMode
# one is with the other SidecarMode mirrors below.


async def test_ray_job_retry__failing_submitter_k8s_job(e2e: E2E) -> None:
    """rayjob_retry_test.go:TestRayJobRetry/"Failing submitter K8s Job": each of the three
    attempts' submitter fails to reach a dashboard; SubmissionFailed after the last."""
    sc = e2e
    name = "fail-submitter-k8s-job"
    await sc.create(_failing_submitter(name, backoffLimit=2, submitterConfig={"backoffLimit": 0}))
    st = await until_retries_exhausted(sc, name, reason="SubmissionFailed", job_status="")
    await sc.gone(RAYCLUSTERS, st["rayClusterName"])
    assert await sc.jobs()
    await sc.client.delete(RAYJOBS, name, sc.namespace)


async def test_ray_job_retry__failing_ray_job_with_http_mode_submission_mode(e2e: E2E) -> None:
    """rayjob_retry_test.go:TestRayJobRetry/"Failing RayJob with HttpMode submission mode"."""
    await retried_app_failures(e2e, "failing-rayjob-in-httpmode", SCRIPTS["fail"], "HTTPMode")


# --- TestRayJobSidecarMode (outside issue 18's selection) -------------------------------------
# A real driver takes seconds to start (ray.init); the fake one is instant, and a sidecar that ends
# before the head's first readiness probe leaves the head unready for good (a terminated container
# is unready), so these entrypoints start with ``sleep 3``.

SIDECAR_DELAY = "sleep 3 && "


async def test_ray_job_sidecar_mode__successful_ray_job(e2e: E2E) -> None:
    """rayjob_sidecar_mode_test.go:TestRayJobSidecarMode/"Successful RayJob": entrypoint CPUs,
    GPUs and a custom resource the head advertises."""
    sc = e2e
    await sc.create(entrypoint_resources_job("counter", SIDECAR_DELAY + SCRIPTS["counter"], "SidecarMode"))
    done = await until_succeeded(sc, "counter")
    await sc.gone(RAYCLUSTERS, done["status"]["rayClusterName"])


async def test_ray_job_sidecar_mode__failing_ray_job_without_cluster_shutdown_after_finished(
    e2e: E2E,
) -> None:
    """rayjob_sidecar_mode_test.go:TestRayJobSidecarMode/"Failing RayJob without cluster
    shutdown after finished"."""
    sc = e2e
    failed = await failed_keeping_cluster(sc, SIDECAR_DELAY + SCRIPTS["fail"], "SidecarMode")
    cluster = failed["status"]["rayClusterName"]
    (head,) = await sc.pods(cluster, "head")
    assert "ray-job-submitter" in [c["name"] for c in head["spec"]["containers"]]
    await delete_with_cluster(sc, "fail", cluster)


async def test_ray_job_sidecar_mode__should_transition_to_complete_if_the_ray_job_has_stopped(
    e2e: E2E,
) -> None:
    """rayjob_sidecar_mode_test.go:TestRayJobSidecarMode/"Should transition to 'Complete' if the
    Ray job has stopped." (the test stops the job, as stop.py does from inside)."""
    sc = e2e
    await sc.create(e2e_rayjob("stop", SCRIPTS["stop"], submissionMode="SidecarMode"))
    await stop_running_job(sc, "stop")


async def test_ray_job_sidecar_mode__ray_job_fails_when_head_pod_is_deleted_when_job_is_running(
    e2e: E2E,
) -> None:
    """rayjob_sidecar_mode_test.go:TestRayJobSidecarMode/"RayJob fails when head Pod is deleted
    when job is running": the provisioned head is not restarted in SidecarMode."""
    sc = e2e
    name = "delete-head-after-submit-sidecar-mode"
    await sc.create(e2e_rayjob(name, "sleep 60", submissionMode="SidecarMode", shutdownAfterJobFinishes=True))
    running = await sc.until(name, {"jobStatus": "RUNNING"})
    cluster_name = running["status"]["rayClusterName"]
    cluster = await sc.cluster(cluster_name)
    assert cluster["metadata"]["labels"]["ray.io/job-submission-mode"] == "SidecarMode"
    assert cluster["metadata"]["annotations"]["ray.io/disable-provisioned-head-restart"] == "true"
    (head,) = await sc.pods(cluster_name, "head")
    await sc.client.delete(PODS, head["metadata"]["name"], sc.namespace)

    async def headless() -> bool:
        return not await sc.pods(cluster_name, "head")

    await eventually(headless, "the head Pod gone")
    failed = await sc.until(name, {"jobDeploymentStatus": "Failed"})
    assert failed["status"]["reason"] in ("AppFailed", "SubmissionFailed")
    assert await headless(), "the head Pod was not recreated"
    await sc.client.delete(RAYJOBS, name, sc.namespace)


async def test_ray_job_sidecar_mode__successful_ray_job_in_sidecar_mode_with_auth_token(e2e: E2E) -> None:
    """rayjob_sidecar_mode_test.go:TestRayJobSidecarMode/"Successful RayJob in Sidecar mode with
    auth token"."""
    sc = e2e
    name = "counter-auth"
    doc = e2e_rayjob(
        name,
        SIDECAR_DELAY + SCRIPTS["counter"],
        submissionMode="SidecarMode",
        runtimeEnvYAML=COUNTER_RUNTIME_ENV,
        shutdownAfterJobFinishes=True,
    )
    await sc.create(with_token_auth(doc))
    cluster, head = await verify_auth_on_cluster(sc, name)
    containers = {c["name"]: c for c in head["spec"]["containers"]}
    verify_auth_env(containers["ray-job-submitter"], cluster)
    await until_succeeded(sc, name)


async def test_ray_job_retry__failing_ray_job_with_sidecar_mode_submission_mode(e2e: E2E) -> None:
    """rayjob_retry_test.go:TestRayJobRetry/"Failing RayJob with SidecarMode submission mode"."""
    sc = e2e
    await retried_app_failures(
        sc, "failing-rayjob-in-sidecar-mode", SIDECAR_DELAY + SCRIPTS["fail"], "SidecarMode"
    )


# --- TestRayJobRecovery (outside issue 18's selection) ----------------------------------------


async def test_ray_job_recovery__ray_job_should_recover_after_pod_deletion(e2e: E2E) -> None:
    """rayjob_recovery_test.go:TestRayJobRecovery/"RayJob should recover after pod deletion":
    the submitter Pod is deleted mid-run; the Job's new Pod re-attaches and the job succeeds
    (``long_running_counter.py`` is ``sleep 8`` then a line; the fake head also shows the
    replacement Pod did not submit a second time)."""
    sc = e2e
    name = "counter"
    await sc.create(
        e2e_rayjob(
            name,
            "sleep 8 && echo test_counter got 8",
            runtimeEnvYAML=COUNTER_RUNTIME_ENV,
            shutdownAfterJobFinishes=True,
            submitterPodTemplate=submitter_template(),
        )
    )
    running = await sc.until(name, {"jobStatus": "RUNNING"})
    table = sc.jobs_of(running["status"]["rayClusterName"])
    selector = f"job-name={name}"
    old = (await sc.client.list(PODS, sc.namespace, label_selector=selector))["items"]
    assert old
    for pod in old:
        await sc.client.delete(PODS, pod["metadata"]["name"], sc.namespace, propagation_policy="Background")
    old_names = {p["metadata"]["name"] for p in old}

    async def replacement_running() -> bool:
        pods = (await sc.client.list(PODS, sc.namespace, label_selector=selector))["items"]
        return any(
            p["metadata"]["name"] not in old_names and (p.get("status") or {}).get("phase") == "Running"
            for p in pods
        )

    await eventually(replacement_running, "a new submitter Pod Running")
    await sc.until(name, {"jobStatus": "SUCCEEDED"})
    await sc.until(name, {"jobDeploymentStatus": "Complete"})
    assert table.submissions == 1


# --- TestRayJobLightWeightMode: HTTPMode (outside issue 18's selection) -------------------------


async def test_ray_job_light_weight_mode__successful_ray_job(e2e: E2E) -> None:
    """rayjob_lightweight_test.go:TestRayJobLightWeightMode/"Successful RayJob" (HTTPMode, with
    entrypoint CPUs, GPUs and a custom resource; the fake head shows what the operator sent)."""
    sc = e2e
    await sc.create(entrypoint_resources_job("counter", SCRIPTS["counter"], "HTTPMode"))
    running = await sc.until("counter", {"jobDeploymentStatus": "Running"})
    table = sc.jobs_of(running["status"]["rayClusterName"])
    done = await until_succeeded(sc, "counter")
    sent = table.jobs[done["status"]["jobId"]]
    assert (sent.entrypoint_num_cpus, sent.entrypoint_num_gpus, sent.entrypoint_resources) == (
        2,
        2,
        {"R1": 2},
    )
    assert sent.runtime_env == {"env_vars": {"counter_name": "test_counter"}}
    await sc.gone(RAYCLUSTERS, done["status"]["rayClusterName"])


async def test_ray_job_light_weight_mode__failing_ray_job_without_cluster_shutdown_after_finished(
    e2e: E2E,
) -> None:
    """rayjob_lightweight_test.go:TestRayJobLightWeightMode/"Failing RayJob without cluster
    shutdown after finished"."""
    sc = e2e
    failed = await failed_keeping_cluster(sc, SCRIPTS["fail"], "HTTPMode")
    await delete_with_cluster(sc, "fail", failed["status"]["rayClusterName"])


async def test_ray_job_light_weight_mode__should_transition_to_complete_if_the_ray_job_has_stopped(
    e2e: E2E,
) -> None:
    """rayjob_lightweight_test.go:TestRayJobLightWeightMode/"Should transition to 'Complete' if
    the Ray job has stopped." (the test stops the job, as stop.py does from inside)."""
    sc = e2e
    await sc.create(e2e_rayjob("stop", SCRIPTS["stop"], submissionMode="HTTPMode"))
    await stop_running_job(sc, "stop")


async def test_ray_job_light_weight_mode__successful_ray_job_in_http_mode_with_auth_token(e2e: E2E) -> None:
    """rayjob_lightweight_test.go:TestRayJobLightWeightMode/"Successful RayJob in HTTP mode with
    auth token" (the fake head requires the token its generated Secret holds, as Ray does, so
    success shows the operator sent it)."""
    sc = e2e
    name = "counter-auth"
    doc = e2e_rayjob(
        name,
        SCRIPTS["counter"],
        submissionMode="HTTPMode",
        runtimeEnvYAML=COUNTER_RUNTIME_ENV,
        shutdownAfterJobFinishes=True,
    )
    await sc.create(with_token_auth(doc))
    await verify_auth_on_cluster(sc, name)
    await until_succeeded(sc, name)
