"""RayJob phases before and around the run: New, Initializing, Waiting, Suspending / Retrying,
Suspended (docs/reference/rayjob.md §3.3), and the children they create.

Crash safety: every name a phase will create under (``rayClusterName``, ``jobId``) is written to
the status *before* the create, in the New pass. A restarted operator therefore finds the same
names, and a create that already happened answers AlreadyExists — never a second RayCluster,
never a second submission id.
"""

from __future__ import annotations

from typing import Any, cast

from controllers import constants as C
from controllers.common.events import create_once, delete_once
from controllers.common.names import generate_name
from controllers.rayjob import builders, scheduling
from controllers.rayjob.context import JobContext
from controllers.rayjob.dashboard_access import stop_ray_job
from controllers.rayjob.shapes import FINISHED_JOB_STATUSES
from kuberay_py.client import Resource
from kuberay_py.client.resources import JOBS
from kuberay_py.objects import Obj

__all__ = [
    "active_deadline_passed",
    "get_or_create_cluster",
    "initializing",
    "new",
    "pre_running_deadline_passed",
    "suspended",
    "suspending_or_retrying",
    "waiting",
]


def new(ctx: JobContext) -> None:
    """initStatus: ids and names for this attempt, startTime now → Initializing."""
    st = ctx.status
    if ctx.mode != "InteractiveMode":
        st["jobId"] = ctx.spec.get("jobId") or generate_name(ctx.ref.name)
    selected = ctx.selector_cluster
    st["rayClusterName"] = selected if selected is not None else generate_name(ctx.ref.name)
    st["jobStatus"] = ""
    st["startTime"] = ctx.now_text()
    ctx.move("Initializing")


def _deadline_passed(ctx: JobContext, field: str, reason: str) -> bool:
    """``spec.<field>`` seconds after ``status.startTime`` → Failed with ``reason`` (else a timer)."""
    deadline = ctx.spec.get(field)
    elapsed = ctx.since("startTime")
    if deadline is None or elapsed is None:
        return False
    if elapsed < deadline:
        ctx.requeue.at(deadline - elapsed)
        return False
    start = ctx.status.get("startTime")
    label = field[0].upper() + field[1:]
    ctx.move("Failed", reason, f"The RayJob has passed the {field}. StartTime: {start}. {label}: {deadline}")
    return True


def active_deadline_passed(ctx: JobContext) -> bool:
    return _deadline_passed(ctx, "activeDeadlineSeconds", "DeadlineExceeded")


def pre_running_deadline_passed(ctx: JobContext) -> bool:
    return _deadline_passed(ctx, "preRunningDeadlineSeconds", "PreRunningDeadlineExceeded")


async def get_or_create_cluster(ctx: JobContext) -> Obj | None:
    """The attempt's RayCluster; created if missing (never in clusterSelector mode)."""
    name = str(ctx.status.get("rayClusterName") or "")
    cluster = ctx.deps.cache.get(C.RAYCLUSTERS, name, ctx.ref.namespace)
    if cluster is not None:
        return cluster
    if ctx.selector_cluster is not None:
        ref = f"{ctx.ref.namespace}/{name}"
        ctx.deps.recorder.event(
            ctx.job,
            C.WARNING,
            "RayClusterNotFound",
            f"RayCluster {ref} set in the clusterSelector is not found. It must be created manually",
        )
        return None  # the cluster's creation wakes us (setup watches selected clusters)
    manifest = builders.cluster_manifest(
        ctx.job,
        name,
        str(ctx.status.get("jobId") or ""),
        sidecar_restart=ctx.deps.options.sidecar_submitter_restart,
    )
    scheduling.tag_cluster(ctx, manifest)
    ref = f"{ctx.ref.namespace}/{name}"
    created = await create_once(
        ctx.deps.recorder,
        ctx.job,
        ctx.deps.client.create(C.RAYCLUSTERS, manifest, ctx.ref.namespace),
        failed=("FailedToCreateRayCluster", f"Failed to create RayCluster {ref}: {{error}}"),
        done=("CreatedRayCluster", f"Created RayCluster {ref}"),
    )
    return (
        created if created is not None else await ctx.deps.client.get(C.RAYCLUSTERS, name, ctx.ref.namespace)
    )


async def _ensure_submitter(ctx: JobContext, cluster: Obj) -> bool:
    """Create the K8sJobMode submitter Job if it does not exist; False if the create failed."""
    if ctx.deps.cache.get(JOBS, ctx.ref.name, ctx.ref.namespace) is not None:
        return True
    job_id = str(ctx.status.get("jobId") or "")
    manifest = builders.submitter_job(ctx.job, cluster, str(ctx.status.get("dashboardURL") or ""), job_id)
    scheduling.tag_submitter(ctx, manifest["spec"]["template"])
    ref = f"{ctx.ref.namespace}/{ctx.ref.name}"
    await create_once(
        ctx.deps.recorder,
        ctx.job,
        ctx.deps.client.create(JOBS, manifest, ctx.ref.namespace),
        failed=("FailedToCreateRayJobSubmitter", f"Failed to create new Kubernetes Job {ref}: {{error}}"),
        done=("CreatedRayJobSubmitter", f"Created Kubernetes Job {ref}"),
    )
    return True


async def initializing(ctx: JobContext) -> None:
    if ctx.spec.get("suspend"):
        ctx.move("Suspending")
        return
    if active_deadline_passed(ctx) or pre_running_deadline_passed(ctx):
        return
    await scheduling.submit(ctx)
    cluster = await get_or_create_cluster(ctx)
    if cluster is None:
        return
    if not ctx.status.get("dashboardURL"):
        ctx.status["rayClusterStatus"] = cluster.get("status") or {}
        if (cluster.get("status") or {}).get("state") != "ready":
            return  # the RayCluster's status change wakes us
        ctx.status["dashboardURL"] = builders.dashboard_url(cluster, ctx.deps.options.cluster_domain)
    if ctx.mode == "InteractiveMode":
        ctx.move("Waiting")
        return
    if ctx.mode == "K8sJobMode":
        await _ensure_submitter(ctx, cluster)
    ctx.move("Running")


def waiting(ctx: JobContext) -> None:
    """InteractiveMode: wait for the user to set ``spec.jobId`` (a spec change wakes us)."""
    if pre_running_deadline_passed(ctx):
        return
    job_id = ctx.spec.get("jobId")
    if job_id:
        ctx.status["jobId"] = job_id
        ctx.move("Running")


async def _delete(
    ctx: JobContext, res: Resource, name: str, what: str, reason_ok: str, reason_bad: str
) -> bool:
    """Delete a child (background propagation); True once it is gone from the cache."""
    cached = ctx.deps.cache.get(res, name, ctx.ref.namespace)
    if cached is None:
        return True
    if cached["metadata"].get("deletionTimestamp"):
        return False  # in progress; its removal from the cache wakes us
    ref = f"{ctx.ref.namespace}/{name}"
    deleted = await delete_once(
        ctx.deps.recorder,
        ctx.job,
        ctx.deps.client.delete(res, name, ctx.ref.namespace, propagation_policy="Background"),
        failed=(reason_bad, f"Failed to delete {what} {ref}: {{error}}"),
        done=(reason_ok, f"Deleted {what} {ref}"),
    )
    return not deleted


async def suspending_or_retrying(ctx: JobContext) -> None:
    """Stop the Ray job (KubeRay does not: #2314), delete the cluster and the submitter, wait until
    both are gone, reset this attempt's status → Suspended / New. ``suspend`` is ignored here."""
    st = ctx.status
    if st.get("jobId") and st.get("jobStatus") not in (*FINISHED_JOB_STATUSES, ""):
        await stop_ray_job(ctx)
    gone = True
    if ctx.selector_cluster is None and st.get("rayClusterName"):
        gone = await _delete(
            ctx,
            C.RAYCLUSTERS,
            str(st["rayClusterName"]),
            "cluster",
            "DeletedRayCluster",
            "FailedToDeleteRayCluster",
        )
    if ctx.mode == "K8sJobMode":
        gone = (
            await _delete(
                ctx,
                JOBS,
                ctx.ref.name,
                "submitter K8s Job",
                "DeletedRayJobSubmitter",
                "FailedToDeleteRayJobSubmitter",
            )
            and gone
        )
    if not gone:
        return  # the children's deletion events wake us
    await scheduling.cleanup(ctx)
    attempt = cast(dict[str, Any], st)  # this attempt's fields, dropped by name
    for key in (
        "rayClusterStatus",
        "rayClusterName",
        "dashboardURL",
        "jobId",
        "message",
        "reason",
        "rayJobInfo",
        "jobStatusCheckFailureStartTime",
    ):
        attempt.pop(key, None)
    st["jobStatus"] = ""
    ctx.move("Suspended" if ctx.state == "Suspending" else "")


def suspended(ctx: JobContext) -> None:
    if not ctx.spec.get("suspend"):
        ctx.status["jobStatus"] = ""
        ctx.move("")
