"""GCS fault tolerance on deletion: the Redis cleanup finalizer (KubeRay ``:216-352``).

With a Redis-backed GCS, a deleted cluster's keys would stay in Redis forever. The finalizer
``ray.io/gcs-ft-redis-cleanup-finalizer`` holds the RayCluster until its Pods are gone and a
cleanup Job has finished; after ``ray.io/gcs-ft-deletion-timeout`` (default 300 s) the finalizer
is removed anyway with a ``ForceDeletedStuckCluster`` Warning, so a broken Redis never wedges
namespace deletion or quota release. When the namespace itself is being deleted, the Job's create
is refused for good (``NamespaceTerminating``) and the finalizer goes at once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from controllers import constants as C
from controllers.api.names import parse_go_duration
from controllers.common import cluster as common
from controllers.common.events import create_once
from controllers.common.finalizers import finalizer_update
from controllers.common.objects import annotations_of, is_deleting, labels_of
from controllers.raycluster.context import ClusterContext
from controllers.raycluster.gcs_embedded import is_embedded
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.pod import external_storage_namespace
from controllers.raycluster.redis_cleanup import build_redis_cleanup_job, redis_cleanup_job_name
from kuberay_py.client import Client, Forbidden, NotFound
from kuberay_py.client.resources import JOBS, PODS
from kuberay_py.log import get_logger

__all__ = ["DEFAULT_FT_DELETION_TIMEOUT", "add_finalizer", "finalize", "needs_finalizer"]

DEFAULT_FT_DELETION_TIMEOUT = 300.0

log = get_logger(__name__)


def needs_finalizer(cluster: dict[str, Any], options: RayClusterOptions) -> bool:
    return options.enable_gcs_ft_redis_cleanup and common.gcs_ft_redis_backend(cluster)


async def add_finalizer(client: Client, cluster: dict[str, Any]) -> dict[str, Any]:
    """Add the finalizer as KubeRay does (typed whole-object Update after its ``setDefaults``);
    returns the updated object, whose generation is bumped if that write changed the spec."""
    body = finalizer_update("RayCluster", cluster, add=C.GCS_FT_REDIS_CLEANUP_FINALIZER)
    return await client.update(C.RAYCLUSTERS, body)


async def _remove_finalizer(client: Client, cluster: dict[str, Any]) -> None:
    try:
        body = finalizer_update("RayCluster", cluster, remove=C.GCS_FT_REDIS_CLEANUP_FINALIZER)
        await client.update(C.RAYCLUSTERS, body)
    except NotFound:
        return


def _timeout(cluster: dict[str, Any]) -> float:
    raw = str(annotations_of(cluster).get(C.GCS_FT_DELETION_TIMEOUT_ANNOTATION_KEY, "")).strip()
    if not raw:
        return DEFAULT_FT_DELETION_TIMEOUT
    try:
        return float(raw)
    except ValueError:
        pass
    try:
        return parse_go_duration(raw)
    except ValueError:
        return DEFAULT_FT_DELETION_TIMEOUT


def _job_finished(job: dict[str, Any]) -> bool:
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed", "FailureTarget") and cond.get("status") == "True":
            return True
    return False


async def finalize(ctx: ClusterContext) -> None:
    """One step of the deletion flow; while work is pending it asks ``ctx.requeue`` for the next poll."""
    client, cluster, options = ctx.deps.client, ctx.cluster, ctx.deps.options
    if C.GCS_FT_REDIS_CLEANUP_FINALIZER not in (cluster["metadata"].get("finalizers") or []):
        return
    if is_embedded(cluster):
        # Added under an earlier Redis-backed spec; the embedded store has no Redis to clean, so the
        # finalizer goes at once (KubeRay does the same) instead of waiting out the flow's timeout.
        await _remove_finalizer(client, cluster)
        return
    ns, name = ctx.ref.namespace, ctx.ref.name
    deleted_at = datetime.fromisoformat(str(cluster["metadata"]["deletionTimestamp"]).replace("Z", "+00:00"))
    elapsed = (ctx.deps.clock.utcnow() - deleted_at).total_seconds()
    timeout = _timeout(cluster)
    if elapsed >= timeout:
        storage_ns = external_storage_namespace(cluster)
        ctx.deps.recorder.event(
            cluster,
            C.WARNING,
            C.EVENT_FORCE_DELETED_STUCK_CLUSTER,
            f"Removed the finalizer {C.GCS_FT_REDIS_CLEANUP_FINALIZER} after {timeout:.0f}s without a "
            f"finished Redis cleanup; the keys of storage namespace {storage_ns} may need manual cleanup.",
        )
        await _remove_finalizer(client, cluster)
        return
    remaining = timeout - elapsed
    ray_types = (C.NODE_TYPE_HEAD, C.NODE_TYPE_WORKER)
    live = [p for p in ctx.pods if labels_of(p).get(C.RAY_NODE_TYPE_LABEL_KEY) in ray_types]
    if live:
        for node_type in ray_types:
            if any(
                labels_of(p).get(C.RAY_NODE_TYPE_LABEL_KEY) == node_type and not is_deleting(p) for p in live
            ):
                await client.delete_collection(
                    PODS,
                    ns,
                    label_selector=f"{C.RAY_CLUSTER_LABEL_KEY}={name},{C.RAY_NODE_TYPE_LABEL_KEY}={node_type}",
                )
        if any(labels_of(p).get(C.RAY_NODE_TYPE_LABEL_KEY) == C.NODE_TYPE_HEAD for p in live):
            ctx.requeue.at(min(options.redis_cleanup_poll, remaining))
            return
    job_name = redis_cleanup_job_name(cluster)
    try:
        job = await client.get(JOBS, job_name, ns)
    except NotFound:
        try:
            await create_once(
                ctx.deps.recorder,
                cluster,
                client.create(JOBS, build_redis_cleanup_job(cluster, options), ns),
                failed=(
                    C.EVENT_FAILED_TO_CREATE_REDIS_CLEANUP_JOB,
                    f"Failed to create Job {ns}/{job_name}: {{error}}",
                ),
                done=(C.EVENT_CREATED_REDIS_CLEANUP_JOB, f"Created Redis cleanup Job {ns}/{job_name}"),
            )
        except Forbidden as exc:
            if not exc.has_cause(C.NAMESPACE_TERMINATING_CAUSE):
                raise
            # The namespace is being deleted: no Job can be created in it again, so waiting out
            # the deletion timeout would only hold the namespace's deletion (docs/differences.md).
            log.warning(
                "Removing the Redis cleanup finalizer: the namespace is being deleted, so no "
                "cleanup Job can run; the storage namespace's keys may need manual cleanup",
                key=ctx.ref.key,
                redis_storage_namespace=external_storage_namespace(cluster),
            )
            await _remove_finalizer(client, cluster)
            return
    else:
        if _job_finished(job):
            await _remove_finalizer(client, cluster)
            return
    ctx.requeue.at(min(options.redis_cleanup_poll, remaining))
