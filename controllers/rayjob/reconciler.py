"""The RayJob reconciler: KubeRay's state machine, event driven (docs/reference/rayjob.md §3).

Each pass: load the RayJob (gone → :meth:`Memory.forget` and its metrics); skip it if
``spec.managedBy`` names another controller; run the finalizer on deletion; validate (an invalid
spec → ``ValidationFailed`` with KubeRay's event, and — unlike KubeRay — a fixed spec starts the
job afresh); add the finalizer; then call the phase of the current ``jobDeploymentStatus``,
chaining transitions within the pass (New ends it: the names it picked must be persisted before
anything is created under them); then the counters/retry rule; then one status write.

Requeue: never on a fixed period. Watches wake the job (its spec, its RayCluster, its submitter
Job, its Service); a phase asks for a timer only while one is pending (deadline, TTL, dashboard
poll of a live Ray job, status-check back-off).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import cast

from controllers import constants as C
from controllers.api.job_validation import validate_rayjob
from controllers.common.invalid import invalid_report
from controllers.common.last_write import load, remember_write
from controllers.common.scope import Deps
from controllers.ray.dashboard import DashboardClientFactory
from controllers.rayjob import cleanup, lifecycle, running, scheduling
from controllers.rayjob.builders import RAYJOB_FINALIZER
from controllers.rayjob.context import JobContext
from controllers.rayjob.memory import Memory
from controllers.rayjob.options import RayJobOptions
from controllers.rayjob.shapes import JobDeploymentStatus, RayJobStatus
from controllers.rayjob.status import apply_transition_rules, write_status
from kuberay_py.controller import Request, Result
from kuberay_py.log import get_logger
from kuberay_py.objects import Obj

__all__ = ["RayJobReconciler"]

log = get_logger(__name__)
MAX_CHAINED = 6


async def _noop(ctx: JobContext) -> None:
    return None


async def _terminal(ctx: JobContext) -> None:
    """Complete / Failed, then the batch scheduler's clean-up whatever happened (KubeRay's defer)."""
    try:
        await cleanup.terminal(ctx)
    finally:
        await scheduling.cleanup_quietly(ctx)


def _phase(state: JobDeploymentStatus) -> Callable[[JobContext], Awaitable[None]]:
    async def sync(fn: Callable[[JobContext], None], ctx: JobContext) -> None:
        fn(ctx)

    table: dict[JobDeploymentStatus, Callable[[JobContext], Awaitable[None]]] = {
        "": lambda ctx: sync(lifecycle.new, ctx),
        "Initializing": lifecycle.initializing,
        "Waiting": lambda ctx: sync(lifecycle.waiting, ctx),
        "Running": running.running,
        "Suspending": lifecycle.suspending_or_retrying,
        "Retrying": lifecycle.suspending_or_retrying,
        "Suspended": lambda ctx: sync(lifecycle.suspended, ctx),
        "Complete": _terminal,
        "Failed": _terminal,
    }
    return table.get(state, _noop)


class RayJobReconciler:
    def __init__(self, deps: Deps[RayJobOptions], dashboards: DashboardClientFactory) -> None:
        self.deps = deps
        self.dashboards = dashboards
        self.memory = Memory()

    def _remember(self, ctx: JobContext, over: Obj, written: Obj) -> None:
        remember_write(ctx.memo, over, written)
        ctx.job = written

    async def reconcile(self, request: Request) -> Result:
        cached = self.deps.cache.get(C.RAYJOBS, request.name, request.namespace)
        loaded = load(cached, request, self.memory)
        if loaded is None:
            return Result()
        job, memo = loaded
        ctx = JobContext(
            self.deps, self.dashboards, memo, job, cast(RayJobStatus, dict(job.get("status") or {}))
        )
        if job["metadata"].get("deletionTimestamp"):
            await cleanup.finalize(ctx)
            return ctx.requeue.result()

        options = self.deps.options
        errors = validate_rayjob(job, deletion_gate=options.deletion_policy, gates=options.cluster_gates)
        if errors:
            report = invalid_report(C.CRD_RAYJOB, job, errors)
            if ctx.state != "ValidationFailed" or ctx.status.get("message") != report.message:
                self.deps.recorder.event(job, C.WARNING, report.reason, report.event)
            ctx.status["jobDeploymentStatus"] = "ValidationFailed"
            ctx.status["reason"] = "ValidationFailed"
            ctx.status["message"] = report.message
            await self._write(ctx)
            return Result()  # a spec change wakes us
        if ctx.state == "ValidationFailed":
            # KubeRay never leaves ValidationFailed; a fixed spec starts the job afresh here.
            ctx.status.pop("reason", None)
            ctx.status.pop("message", None)
            ctx.status["jobDeploymentStatus"] = ""

        if ctx.state == "" and RAYJOB_FINALIZER not in (job["metadata"].get("finalizers") or []):
            # KubeRay adds it only while the job is New (jobDeploymentStatus empty).
            written = await cleanup.add_finalizer(ctx)
            self._remember(ctx, job, written)

        old_state: JobDeploymentStatus = (
            cast(RayJobStatus, ctx.job.get("status") or {}).get("jobDeploymentStatus") or ""
        )
        if old_state == "ValidationFailed":
            old_state = ""
        for _ in range(MAX_CHAINED):
            before = ctx.state
            ctx.requeue.now = False
            await _phase(before)(ctx)
            if ctx.state == before or before == "" or ctx.state in ("Complete", "Failed", "Retrying"):
                break
        apply_transition_rules(ctx, old_state)
        await self._write(ctx)
        return ctx.requeue.result()

    async def _write(self, ctx: JobContext) -> None:
        over = ctx.job
        written = await write_status(ctx)
        if written is not None:
            self._remember(ctx, over, written)
