"""The Running phase (docs/reference/rayjob.md §3.4): deadlines, the submitter, the dashboard poll.

Event driven where KubeRay polls every 3 s: the submitter Job's and the RayCluster's changes
wake the RayJob through the watches, and the dashboard is polled only while a Ray job is live,
first ``poll_min`` seconds after a change of its status and then doubling to ``poll_max`` while
nothing changes. A finished submitter wakes us at once, so the terminal status is read then.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from controllers import constants as C
from controllers.common.cluster import head_service_name
from controllers.common.events import create_once, write_with_events
from controllers.ray.dashboard import DashboardClosed, DashboardError
from controllers.ray.jobs import TERMINAL_JOB_STATUSES, JobAlreadySubmitted, JobInfo, JobSubmission
from controllers.rayjob import builders
from controllers.rayjob.context import JobContext
from controllers.rayjob.dashboard_access import NoDashboard, ray_jobs, stop_ray_job
from controllers.rayjob.lifecycle import active_deadline_passed, get_or_create_cluster
from controllers.rayjob.shapes import JobStatus
from kuberay_py.client import Conflict
from kuberay_py.client.resources import JOBS, PODS, SERVICES
from kuberay_py.clock import format_rfc3339, parse_rfc3339
from kuberay_py.log import get_logger
from kuberay_py.objects import Obj

__all__ = [
    "GRACE_PERIOD_MESSAGE",
    "GRACE_PERIOD_REASON",
    "running",
    "submitter_outcome",
    "transition_grace_period_over",
]

log = get_logger(__name__)

GRACE_PERIOD_REASON = "JobDeploymentStatusTransitionGracePeriodExceeded"
GRACE_PERIOD_MESSAGE = (
    "JobDeploymentStatus does not transition to Complete or Failed within the grace period "
    "after JobStatus reaches a terminal state."
)


def _condition(job: Obj, type_: str) -> dict[str, Any] | None:
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_ and cond.get("status") == "True":
            return dict(cond)
    return None


def submitter_outcome(ctx: JobContext) -> tuple[datetime | None, dict[str, Any] | None, bool]:
    """(when the submitter finished, its failure condition, whether it exists) for K8sJob/Sidecar."""
    if ctx.mode == "K8sJobMode":
        sub = ctx.deps.cache.get(JOBS, ctx.ref.name, ctx.ref.namespace)
        if sub is None:
            return None, None, False
        failed = _condition(sub, "Failed")
        done = failed or _condition(sub, "Complete")
        return (parse_rfc3339(done.get("lastTransitionTime")) if done else None), failed, True
    if ctx.mode == "SidecarMode":
        cluster = str(ctx.status.get("rayClusterName") or "")
        heads = ctx.deps.cache.list(
            PODS,
            ctx.ref.namespace,
            labels={C.RAY_CLUSTER_LABEL_KEY: cluster, C.RAY_NODE_TYPE_LABEL_KEY: C.NODE_TYPE_HEAD},
        )
        if not heads:
            return None, {"reason": "AppFailed", "message": "Ray head pod not found."}, False
        for cs in (heads[0].get("status") or {}).get("containerStatuses") or []:
            if cs.get("name") == builders.SUBMITTER_CONTAINER:
                if ctx.deps.options.sidecar_submitter_restart:
                    return _restarting_sidecar(ctx, cs)
                term = (cs.get("state") or {}).get("terminated")
                if term:
                    when = parse_rfc3339(term.get("finishedAt")) or ctx.now()
                    if term.get("exitCode"):
                        code, why = term.get("exitCode"), term.get("reason", "")
                        name = builders.SUBMITTER_CONTAINER
                        msg = f"Ray head pod container {name} terminated with exit code {code}: {why}"
                        return when, {"reason": "SubmitterFailed", "message": msg}, True
                    return when, None, True
        return None, None, True
    return None, None, True


def _restarting_sidecar(
    ctx: JobContext, cs: dict[str, Any]
) -> tuple[datetime | None, dict[str, Any] | None, bool]:
    """SidecarSubmitterRestart: the kubelet restarts a failed submitter container, so one
    non-zero exit is transient; the job fails once the container has failed and been restarted
    ``submitterConfig.backoffLimit`` times (default 2, as the K8sJobMode Job's). It counts as
    finished whenever it is terminated (the 30 s submitter-finished rule then applies, as KubeRay).
    """
    term = (cs.get("state") or {}).get("terminated")
    finished = (parse_rfc3339(term.get("finishedAt")) or ctx.now()) if term else None
    if not ((cs.get("lastState") or {}).get("terminated")) or (term and not term.get("exitCode")):
        return finished, None, True
    limit = (ctx.spec.get("submitterConfig") or {}).get("backoffLimit")
    if int(cs.get("restartCount") or 0) < (2 if limit is None else int(limit)):
        return finished, None, True
    name = builders.SUBMITTER_CONTAINER
    msg = f"Ray head pod submitter container {name} terminated after exceeding the maximum restart count"
    return finished, {"reason": "SubmitterFailed", "message": msg}, True


async def _head_service(ctx: JobContext, cluster: Obj) -> None:
    """``<rayjob>-head-svc`` → the current cluster's head (created, or re-pointed after a retry)."""
    name = builders.job_head_service_name(ctx.job)
    ref = f"{ctx.ref.namespace}/{name}"
    existing = ctx.deps.cache.get(SERVICES, name, ctx.ref.namespace)
    cname = cluster["metadata"]["name"]
    if existing is not None:
        if ((existing.get("spec") or {}).get("selector") or {}).get(C.RAY_CLUSTER_LABEL_KEY) == cname:
            return
        source = ctx.deps.cache.get(SERVICES, head_service_name(cluster), ctx.ref.namespace)
        if source is None:
            return
        body = dict(existing)
        desired = builders.job_head_service(ctx.job, cluster, source)
        body["spec"] = dict(existing.get("spec") or {}) | {"selector": desired["spec"]["selector"]}
        try:
            await write_with_events(
                ctx.deps.recorder,
                ctx.job,
                ctx.deps.client.update(SERVICES, body),
                failed=("FailedToUpdateService", f"Failed to update the service {ref}, {{error}}"),
                done=("UpdatedService", f"Updated the service {ref}"),
                expected=(Conflict,),
            )
        except Conflict:
            ctx.requeue.immediately()
        return
    source = ctx.deps.cache.get(SERVICES, head_service_name(cluster), ctx.ref.namespace)
    if source is None:
        return  # the cluster's head Service appears with the cluster becoming ready
    await create_once(
        ctx.deps.recorder,
        ctx.job,
        ctx.deps.client.create(
            SERVICES, builders.job_head_service(ctx.job, cluster, source), ctx.ref.namespace
        ),
        failed=("FailedToCreateService", f"Failed to create the service {ref}, {{error}}"),
        done=("CreatedService", f"Created the service {ref}"),
    )


def _ms(value: int) -> str | None:
    return format_rfc3339(datetime.fromtimestamp(value / 1000, UTC)) if value else None


def transition_grace_period_over(ctx: JobContext) -> bool:
    """KubeRay's transition grace period: Ray's job ended ``transition_grace_period`` s ago (its
    persisted ``rayJobInfo.endTime``) and the RayJob is still Running -> Complete, or Failed when
    Ray says FAILED. Within the period it asks to be woken when the period ends: KubeRay finds it
    by polling every 3 s, nothing else here would wake the RayJob then.
    """
    st = ctx.status
    if st.get("jobStatus") not in TERMINAL_JOB_STATUSES:
        return False
    ended = parse_rfc3339((st.get("rayJobInfo") or {}).get("endTime"))
    if ended is None:
        return False
    left = ctx.deps.options.transition_grace_period - (ctx.now() - ended).total_seconds()
    if left > 0:
        ctx.requeue.at(left)
        return False
    log.info(
        "JobDeploymentStatus did not follow the terminal JobStatus within the grace period",
        rayjob=ctx.ref.key,
        end_time=st["rayJobInfo"]["endTime"],
        grace_period_seconds=ctx.deps.options.transition_grace_period,
    )
    ctx.move(
        "Failed" if st.get("jobStatus") == "FAILED" else "Complete", GRACE_PERIOD_REASON, GRACE_PERIOD_MESSAGE
    )
    return True


def _poll_later(ctx: JobContext, status: str) -> None:
    memo, opts = ctx.memo, ctx.deps.options
    if status != memo.polled_status or memo.poll_interval <= 0:
        memo.poll_interval = opts.poll_min
    else:
        memo.poll_interval = min(memo.poll_interval * 2, opts.poll_max)
    memo.polled_status = status
    ctx.requeue.at(memo.poll_interval)


def _status_check_failed(ctx: JobContext, error: str) -> None:
    st = ctx.status
    if not st.get("jobStatusCheckFailureStartTime"):
        st["jobStatusCheckFailureStartTime"] = ctx.now_text()
    log.info("Ray job status check failed", rayjob=ctx.ref.key, error=error)
    elapsed = ctx.since("jobStatusCheckFailureStartTime") or 0.0
    opts = ctx.deps.options
    ctx.requeue.at(min(opts.poll_max, max(opts.poll_min, opts.status_check_timeout - elapsed)))


def _copy_info(ctx: JobContext, info: JobInfo, cluster: Obj) -> None:
    st = ctx.status
    st["rayClusterStatus"] = cluster.get("status") or {}
    st["jobStatus"] = cast(JobStatus, info.status)  # Ray's job API answers one of these
    st["message"] = info.message
    st["reason"] = ""
    times = {k: v for k, v in (("startTime", _ms(info.start_time)), ("endTime", _ms(info.end_time))) if v}
    if times:
        st["rayJobInfo"] = times


async def _read_failed_job(ctx: JobContext, cluster: Obj) -> None:
    """A failed sidecar: ``ray job submit`` (no ``--no-wait``) exits 1 when the Ray job fails, and
    may end before any poll saw FAILED. KubeRay then reads the outcome from its previous poll,
    so user code that failed says AppFailed or SubmissionFailed depending on which came first;
    one read of the job now makes it AppFailed whenever Ray says FAILED (docs/differences.md)."""
    if ctx.status.get("jobStatus") == "FAILED":
        return
    try:
        info = await (await ray_jobs(ctx)).get(str(ctx.status.get("jobId") or ""))
    except (NoDashboard, DashboardError):
        return
    if info is not None and info.status == "FAILED":
        _copy_info(ctx, info, cluster)


async def _submit(ctx: JobContext) -> None:
    """HTTPMode: the operator submits, always with the same submission id (a retry is safe)."""
    job_id = str(ctx.status.get("jobId") or "")
    body = builders.submission_body(ctx.job, job_id)
    submission = JobSubmission(
        entrypoint=body["entrypoint"],
        submission_id=job_id,
        runtime_env=body.get("runtime_env"),
        metadata=body.get("metadata"),
        entrypoint_num_cpus=float(body.get("entrypoint_num_cpus") or 0),
        entrypoint_num_gpus=float(body.get("entrypoint_num_gpus") or 0),
        entrypoint_resources=body.get("entrypoint_resources"),
    )
    try:
        ray = await ray_jobs(ctx)
        await ray.submit(submission)
    except JobAlreadySubmitted:
        pass
    except (NoDashboard, DashboardError) as exc:
        _status_check_failed(ctx, str(exc))
        return
    ctx.status.pop("jobStatusCheckFailureStartTime", None)
    ctx.memo.polled_status = ""
    ctx.requeue.at(ctx.deps.options.poll_min)


async def running(ctx: JobContext) -> None:
    st = ctx.status
    if ctx.spec.get("suspend"):
        ctx.move("Suspending")
        return
    if active_deadline_passed(ctx):
        await stop_ray_job(ctx)
        return
    if transition_grace_period_over(ctx):
        return
    failing_for = ctx.since("jobStatusCheckFailureStartTime")
    timeout = ctx.deps.options.status_check_timeout
    if failing_for is not None and failing_for >= timeout:
        since = (parse_rfc3339(st["jobStatusCheckFailureStartTime"]) or ctx.now()).strftime(
            "%Y-%m-%d %H:%M:%S"
        )
        ctx.move(
            "Failed",
            "JobStatusCheckTimeoutExceeded",
            f"Job status checks have been failing since {since}; exceeded timeout of {int(timeout)}s",
        )
        return
    cluster = await get_or_create_cluster(ctx)
    if cluster is None:
        return
    if ctx.selector_cluster is None:
        await _head_service(ctx, cluster)
    finished_at, failure, exists = submitter_outcome(ctx)
    if ctx.mode == "K8sJobMode" and not exists:
        # KubeRay errors forever when the Job vanished mid-run; the script's status guard makes a
        # re-created submitter safe (it re-attaches to the job's logs, never submits twice).
        await write_with_events(
            ctx.deps.recorder,
            ctx.job,
            ctx.deps.client.create(
                JOBS,
                builders.submitter_job(
                    ctx.job, cluster, str(st.get("dashboardURL") or ""), str(st.get("jobId") or "")
                ),
                ctx.ref.namespace,
            ),
            failed=(
                "FailedToCreateRayJobSubmitter",
                f"Failed to create new Kubernetes Job {ctx.ref.key}: {{error}}",
            ),
            done=("CreatedRayJobSubmitter", f"Created Kubernetes Job {ctx.ref.key}"),
        )
        return
    if failure is not None:
        if ctx.mode == "SidecarMode" and failure.get("reason") == "SubmitterFailed":
            await _read_failed_job(ctx, cluster)
        if st.get("jobStatus") == "FAILED" or failure.get("reason") == "AppFailed":
            ctx.move("Failed", "AppFailed", failure.get("message") or st.get("message") or "")
        else:
            message = failure.get("message") or ""
            if ctx.mode == "K8sJobMode":
                message = f"Job submission has failed. Reason: {failure.get('reason')}. Message: {message}"
            ctx.move("Failed", "SubmissionFailed", message)
        return
    job_id = str(st.get("jobId") or "")
    try:
        ray = await ray_jobs(ctx)
        info = await ray.get(job_id)
    except DashboardClosed:
        return
    except (NoDashboard, DashboardError) as exc:
        _status_check_failed(ctx, str(exc))
        return
    if info is None:
        if ctx.mode == "HTTPMode":
            await _submit(ctx)
        elif finished_at is not None:
            ctx.move("Failed", "AppFailed", "Submitter completed but Ray job not found in RayCluster.")
        else:
            _poll_later(ctx, "")
        return
    st.pop("jobStatusCheckFailureStartTime", None)
    _copy_info(ctx, info, cluster)
    submitter_modes = ctx.mode in ("K8sJobMode", "SidecarMode")
    if info.terminal and (finished_at is not None or not submitter_modes):
        if info.status == "FAILED":
            ctx.move("Failed", "AppFailed", info.message)
        else:
            ctx.move("Complete")
        return
    if finished_at is not None:
        left = ctx.deps.options.submitter_finished_timeout - (ctx.now() - finished_at).total_seconds()
        if left <= 0:
            st["jobStatus"] = "FAILED"
            at = finished_at.strftime("%Y-%m-%d %H:%M:%S")
            ctx.move(
                "Failed",
                "JobDeploymentStatusTransitionGracePeriodExceeded",
                f"The RayJob submitter finished at {at} but the ray job did not reach terminal state "
                f"within {int(ctx.deps.options.submitter_finished_timeout)}s",
            )
            return
        ctx.requeue.at(left)
    if not info.terminal:
        _poll_later(ctx, info.status)
        return
    # Ray is terminal but the submitter still tails the logs: its Job's completion wakes us, and
    # the transition grace period bounds the wait for a submitter that never ends.
    transition_grace_period_over(ctx)
