"""The create-wait-assert steps the RayJob mirrors share.

KubeRay's ``test/e2erayjob`` repeats these steps inline in each subtest; here each is written
once, so a mirror reads as the list of its subtest's steps and a fix to a step reaches all of
them.
"""

from __future__ import annotations

from typing import Any

from controllers.constants import RAYCLUSTERS, RAYJOBS
from kuberay_py.client.resources import PODS

from .conftest import COUNTER_RUNTIME_ENV, E2E, SCRIPTS, e2e_rayjob, eventually, state_is, submitter_template

__all__ = [
    "counter_job",
    "delete_with_cluster",
    "entrypoint_resources_job",
    "failed_keeping_cluster",
    "no_jobs",
    "retried_app_failures",
    "stop_running_job",
    "submitter_pods",
    "until_app_failed",
    "until_retries_exhausted",
    "until_succeeded",
    "until_terminal",
    "verify_auth_env",
    "verify_auth_on_cluster",
    "with_token_auth",
]

TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")
RETRIES_DEADLINE = 120.0  # three attempts, each with its own cluster


def counter_job(name: str, **spec: Any) -> dict[str, Any]:
    """counter.py in K8sJobMode with KubeRay's submitter template."""
    return e2e_rayjob(
        name,
        SCRIPTS["counter"],
        runtimeEnvYAML=COUNTER_RUNTIME_ENV,
        submitterPodTemplate=submitter_template(),
        **spec,
    )


def entrypoint_resources_job(name: str, entrypoint: str, mode: str) -> dict[str, Any]:
    """The "Successful RayJob" of the SidecarMode and HTTPMode suites: counter.py asking for 2
    CPUs, 2 GPUs and 2 of ``R1``, on a cluster without workers whose head advertises 4 of each."""
    doc = e2e_rayjob(
        name,
        entrypoint,
        submissionMode=mode,
        entrypointNumCpus=2,
        entrypointNumGpus=2,
        entrypointResources='{"R1": 2}',
        runtimeEnvYAML=COUNTER_RUNTIME_ENV,
        shutdownAfterJobFinishes=True,
    )
    cluster_spec = doc["spec"]["rayClusterSpec"]
    del cluster_spec["workerGroupSpecs"]
    cluster_spec["headGroupSpec"]["rayStartParams"] = {
        "dashboard-host": "0.0.0.0",
        "num-gpus": "4",
        "num-cpus": "4",
        "resources": "'{\"R1\": 4}'",
    }
    return doc


def with_token_auth(doc: dict[str, Any]) -> dict[str, Any]:
    """The same RayJob with ``authOptions.mode: token`` on its cluster."""
    doc["spec"]["rayClusterSpec"]["authOptions"] = {"mode": "token"}
    return doc


async def no_jobs(sc: E2E) -> bool:
    return not await sc.jobs()


async def until_terminal(sc: E2E, name: str) -> dict[str, Any]:
    """The RayJob once Ray's job reached a terminal status."""

    async def terminal() -> dict[str, Any] | None:
        job = await sc.get(name)
        return job if (job.get("status") or {}).get("jobStatus") in TERMINAL else None

    return dict(await eventually(terminal, f"{name} Ray job terminal", 60))


async def until_succeeded(sc: E2E, name: str) -> dict[str, Any]:
    """Ray's job SUCCEEDED, then the RayJob Complete; returns the Complete RayJob."""
    done = await until_terminal(sc, name)
    assert done["status"]["jobStatus"] == "SUCCEEDED", done["status"]
    return await sc.until(name, {"jobDeploymentStatus": "Complete"})


async def until_app_failed(sc: E2E, name: str) -> dict[str, Any]:
    """Ray's job FAILED, then the RayJob Failed with reason AppFailed; returns the failed RayJob."""
    done = await until_terminal(sc, name)
    assert done["status"]["jobStatus"] == "FAILED", done["status"]
    failed = await sc.until(name, {"jobDeploymentStatus": "Failed"})
    assert failed["status"]["reason"] == "AppFailed", failed["status"]
    return failed


async def failed_keeping_cluster(sc: E2E, entrypoint: str, mode: str) -> dict[str, Any]:
    """ "Failing RayJob without cluster shutdown after finished" in a mode without a submitter
    Job: RayJob ``fail`` ends Failed/AppFailed and no Job was created; returns the failed RayJob."""
    await sc.create(e2e_rayjob("fail", entrypoint, submissionMode=mode, shutdownAfterJobFinishes=False))
    failed = await until_app_failed(sc, "fail")
    assert await no_jobs(sc)
    return failed


async def retried_app_failures(sc: E2E, name: str, entrypoint: str, mode: str) -> None:
    """ "Failing RayJob with <mode> submission mode": a failing job with ``backoffLimit: 2``
    fails three times, then for good. Deletes the RayJob after."""
    doc = e2e_rayjob(name, entrypoint, submissionMode=mode, backoffLimit=2, shutdownAfterJobFinishes=False)
    await sc.create(doc)
    await until_retries_exhausted(sc, name)
    await sc.client.delete(RAYJOBS, name, sc.namespace)


async def until_retries_exhausted(
    sc: E2E, name: str, *, reason: str = "AppFailed", job_status: str = "FAILED"
) -> dict[str, Any]:
    """The TestRayJobRetry ending: Failed after ``backoffLimit: 2``, i.e. three failed attempts
    and none succeeded; returns the RayJob's status."""
    failed = await sc.until(name, {"jobDeploymentStatus": "Failed"}, timeout=RETRIES_DEADLINE)
    st: dict[str, Any] = failed["status"]
    assert (st.get("jobStatus", ""), st["reason"], st["failed"], st.get("succeeded", 0)) == (
        job_status,
        reason,
        3,
        0,
    ), st
    return st


async def stop_running_job(sc: E2E, name: str) -> None:
    """What stop.py does from inside the job: once it runs, stop it through the dashboard; the
    RayJob turns Complete with Ray's job STOPPED. Deletes the RayJob after."""
    running = await sc.until(name, {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"})
    assert sc.jobs_of(running["status"]["rayClusterName"]).stop(running["status"]["jobId"])
    done = await sc.until(name, {"jobDeploymentStatus": "Complete"})
    assert done["status"]["jobStatus"] == "STOPPED"
    await sc.client.delete(RAYJOBS, name, sc.namespace)


async def delete_with_cluster(sc: E2E, name: str, cluster: str) -> None:
    """Delete RayJob ``name``; its RayCluster ``cluster`` goes with it (owner reference)."""
    await sc.client.delete(RAYJOBS, name, sc.namespace)
    await sc.gone(RAYCLUSTERS, cluster)


def verify_auth_env(container: dict[str, Any], cluster: str) -> None:
    """Token auth on: RAY_AUTH_MODE=token and the token from the cluster's generated Secret."""
    env = {e["name"]: e for e in container.get("env") or []}
    assert env["RAY_AUTH_MODE"]["value"] == "token", container["name"]
    ref = env["RAY_AUTH_TOKEN"]["valueFrom"]["secretKeyRef"]
    assert cluster in ref["name"] and ref["key"] == "auth_token", container["name"]


async def verify_auth_on_cluster(sc: E2E, name: str) -> tuple[str, dict[str, Any]]:
    """Wait for the RayJob's cluster to be Ready and check the auth env of its head and of every
    worker; returns the cluster's name and its head Pod."""

    async def cluster_named() -> str:
        return str(((await sc.get(name)).get("status") or {}).get("rayClusterName") or "")

    cluster = str(await eventually(cluster_named, "rayClusterName set"))
    await sc.until_cluster(cluster, state_is("ready"), "Ready")
    (head,) = await sc.pods(cluster, "head")
    verify_auth_env(head["spec"]["containers"][0], cluster)
    workers = await sc.pods(cluster, "worker")
    assert workers
    for pod in workers:
        verify_auth_env(pod["spec"]["containers"][0], cluster)
    return cluster, head


async def submitter_pods(sc: E2E, name: str) -> list[dict[str, Any]]:
    """The Pods of RayJob ``name``'s submitter Job (labelled by the Job controller)."""
    return list((await sc.client.list(PODS, sc.namespace, label_selector=f"job-name={name}"))["items"])
