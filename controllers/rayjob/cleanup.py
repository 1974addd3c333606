"""After the job: Complete/Failed clean-up (docs/reference/rayjob.md §3.10) and the finalizer (§3.11).

TTLs count from ``status.endTime``; the reconcile wakes when the earliest one is due (KubeRay adds
2 s of slack; a wake on the clock needs none). One action per pass, the most impactful overdue
rule first (DeleteSelf > DeleteCluster > DeleteWorkers). Differences, in docs/differences.md: a
clusterSelector job still honours ``DeleteSelf`` and ``DELETE_RAYJOB_CR_AFTER_JOB_FINISHES``
(KubeRay silently skips both), and a dashboard that cannot be reached never blocks deletion.
"""

from __future__ import annotations

from controllers import constants as C
from controllers.common.events import delete_once, write_with_events
from controllers.common.finalizers import finalizer_update
from controllers.rayjob.builders import RAYJOB_FINALIZER
from controllers.rayjob.context import JobContext
from controllers.rayjob.dashboard_access import stop_ray_job
from kuberay_py.client import Conflict, NotFound
from kuberay_py.objects import Obj

__all__ = ["add_finalizer", "finalize", "terminal"]

_RANK = {"DeleteSelf": 3, "DeleteCluster": 2, "DeleteWorkers": 1, "DeleteNone": 0}


async def add_finalizer(ctx: JobContext) -> Obj:
    """Add the finalizer as KubeRay does, with a typed whole-object Update (which bumps the
    generation of a hand-written spec); returns the stored object."""
    if RAYJOB_FINALIZER in (ctx.job["metadata"].get("finalizers") or []):
        return ctx.job
    return await ctx.deps.client.update(C.RAYJOBS, finalizer_update("RayJob", ctx.job, add=RAYJOB_FINALIZER))


async def finalize(ctx: JobContext) -> None:
    """Deleting: stop a Ray job that is still live, then let go (owner GC removes the children)."""
    if RAYJOB_FINALIZER not in (ctx.job["metadata"].get("finalizers") or []):
        return
    if ctx.status.get("jobStatus") not in ("STOPPED", "SUCCEEDED", "FAILED"):
        await stop_ray_job(ctx)
    try:
        await ctx.deps.client.update(C.RAYJOBS, finalizer_update("RayJob", ctx.job, remove=RAYJOB_FINALIZER))
    except NotFound:
        pass
    except Conflict:
        ctx.requeue.immediately()


async def _delete_self(ctx: JobContext) -> None:
    try:
        await ctx.deps.client.delete(
            C.RAYJOBS, ctx.ref.name, ctx.ref.namespace, propagation_policy="Background"
        )
    except NotFound:
        pass


async def _delete_cluster(ctx: JobContext) -> None:
    name = str(ctx.status.get("rayClusterName") or "")
    ref = f"{ctx.ref.namespace}/{name}"
    await delete_once(
        ctx.deps.recorder,
        ctx.job,
        ctx.deps.client.delete(C.RAYCLUSTERS, name, ctx.ref.namespace, propagation_policy="Background"),
        failed=("FailedToDeleteRayCluster", f"Failed to delete cluster {ref}: {{error}}"),
        done=("DeletedRayCluster", f"Deleted cluster {ref}"),
    )


async def _delete_workers(ctx: JobContext, cluster: Obj) -> None:
    groups = [dict(g) | {"suspend": True} for g in (cluster.get("spec") or {}).get("workerGroupSpecs") or []]
    ref = f"{ctx.ref.namespace}/{cluster['metadata']['name']}"
    patch = {
        "spec": {"workerGroupSpecs": groups},
        "metadata": {"resourceVersion": cluster["metadata"]["resourceVersion"]},
    }
    try:
        await write_with_events(
            ctx.deps.recorder,
            ctx.job,
            ctx.deps.client.patch(C.RAYCLUSTERS, cluster["metadata"]["name"], patch, ctx.ref.namespace),
            failed=("FailedToUpdateRayCluster", f"Failed to update cluster {ref}: {{error}}"),
            done=(
                "UpdatedRayCluster",
                f"Set the `suspend` field to true for all worker groups in cluster {ref}",
            ),
            expected=(NotFound, Conflict),
        )
    except (NotFound, Conflict):
        ctx.requeue.immediately()


def _done(ctx: JobContext, policy: str, cluster: Obj | None) -> bool:
    if policy == "DeleteNone":
        return True
    if policy == "DeleteSelf":
        return False
    if cluster is None or cluster["metadata"].get("deletionTimestamp"):
        return True
    if policy == "DeleteWorkers":
        groups = (cluster.get("spec") or {}).get("workerGroupSpecs") or []
        return all(g.get("suspend") for g in groups)
    return False


async def _run(ctx: JobContext, policy: str, cluster: Obj | None) -> None:
    if policy == "DeleteSelf":
        await _delete_self(ctx)
    elif policy == "DeleteCluster":
        await _delete_cluster(ctx)
    elif policy == "DeleteWorkers" and cluster is not None:
        await _delete_workers(ctx, cluster)


def _due_in(ctx: JobContext, ttl: float) -> float:
    elapsed = ctx.since("endTime")
    return 0.0 if elapsed is None else ttl - elapsed


async def terminal(ctx: JobContext) -> None:
    st = ctx.status
    spec = ctx.spec
    selector = ctx.selector_cluster is not None
    cluster = (
        None
        if selector
        else ctx.deps.cache.get(C.RAYCLUSTERS, str(st.get("rayClusterName") or ""), ctx.ref.namespace)
    )
    strategy = spec.get("deletionStrategy") if ctx.deps.options.deletion_policy else None
    if strategy and strategy.get("deletionRules"):
        overdue: list[str] = []
        for rule in strategy["deletionRules"]:
            cond = rule.get("condition") or {}
            matches = (cond.get("jobStatus") and cond["jobStatus"] == st.get("jobStatus")) or (
                cond.get("jobDeploymentStatus")
                and cond["jobDeploymentStatus"] == st.get("jobDeploymentStatus")
            )
            if not matches:
                continue
            left = _due_in(ctx, float(cond.get("ttlSeconds") or 0))
            if left > 0:
                ctx.requeue.at(left)
            elif not _done(ctx, rule["policy"], cluster):
                overdue.append(rule["policy"])
        if overdue:
            await _run(ctx, max(overdue, key=lambda p: _RANK[p]), cluster)
        return
    if strategy and (strategy.get("onSuccess") or strategy.get("onFailure")):
        side = {"SUCCEEDED": "onSuccess", "FAILED": "onFailure"}.get(str(st.get("jobStatus") or ""))
        policy = ((strategy.get(side) or {}).get("policy") if side else None) or "DeleteNone"
        if policy == "DeleteNone":
            return
        left = _due_in(ctx, float(spec.get("ttlSecondsAfterFinished") or 0))
        if left > 0:
            ctx.requeue.at(left)
        elif not _done(ctx, policy, cluster):
            await _run(ctx, policy, cluster)
        return
    if spec.get("shutdownAfterJobFinishes"):
        left = _due_in(ctx, float(spec.get("ttlSecondsAfterFinished") or 0))
        if left > 0:
            ctx.requeue.at(left)
        elif ctx.deps.options.delete_rayjob_after_finishes:
            await _delete_self(ctx)
        elif cluster is not None and not cluster["metadata"].get("deletionTimestamp"):
            await _delete_cluster(ctx)
