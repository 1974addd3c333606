"""The RayJob side of ``--batch-scheduler`` (KubeRay v1.7.0's rayjob_controller calls).

* Initializing: the scheduler's submission hook (Volcano's RayJob PodGroup; KAI and
  scheduler-plugins refuse some RayJobs here, which fails the reconcile and retries, as KubeRay).
* The K8sJobMode RayCluster and the submitter Pod template get the scheduler's metadata before
  their create (a SidecarMode / InteractiveMode RayCluster gets none from the RayJob).
* Complete / Failed, and a finished suspend: the scheduler's clean-up (Volcano shrinks the
  PodGroup), with KubeRay's ``BatchSchedulerCleanedUp`` / ``FailedToCleanupBatchScheduler`` events.
"""

from __future__ import annotations

from controllers import constants as C
from controllers.rayjob.context import JobContext
from kuberay_py.client import ApiError
from kuberay_py.log import get_logger
from kuberay_py.objects import Obj

__all__ = ["cleanup", "cleanup_quietly", "submit", "tag_cluster", "tag_submitter"]

log = get_logger(__name__)


async def submit(ctx: JobContext) -> None:
    if ctx.deps.options.batch_scheduler is not None:
        await ctx.deps.options.batch_scheduler.submit_job(ctx.deps.client, ctx.job)


def tag_cluster(ctx: JobContext, manifest: Obj) -> None:
    if ctx.deps.options.batch_scheduler is not None and ctx.mode == "K8sJobMode":
        ctx.deps.options.batch_scheduler.add_metadata(ctx.job, "RayJob", manifest, "")


def tag_submitter(ctx: JobContext, template: Obj) -> None:
    if ctx.deps.options.batch_scheduler is not None:
        ctx.deps.options.batch_scheduler.add_metadata(ctx.job, "RayJob", template, "submittergroup")


async def cleanup(ctx: JobContext) -> None:
    """Raises on failure (the suspend path retries); the terminal path logs and goes on."""
    scheduler = ctx.deps.options.batch_scheduler
    if scheduler is None:
        return
    job = ctx.job | {"status": ctx.status}
    try:
        done = await scheduler.cleanup_job(ctx.deps.client, job)
    except ApiError as exc:
        ctx.deps.recorder.event(
            ctx.job,
            C.WARNING,
            "FailedToCleanupBatchScheduler",
            f"Failed to cleanup batch scheduler resources for RayJob {ctx.ref.key}: {exc}",
        )
        raise
    if done:
        ctx.deps.recorder.event(
            ctx.job,
            C.NORMAL,
            "BatchSchedulerCleanedUp",
            f"Cleaned up batch scheduler resources for RayJob {ctx.ref.key}",
        )


async def cleanup_quietly(ctx: JobContext) -> None:
    """The terminal path: a failed clean-up is logged (and has its event), never retried here."""
    try:
        await cleanup(ctx)
    except ApiError as exc:
        log.error("failed to cleanup batch scheduler resources", key=ctx.ref.key, error=str(exc))
