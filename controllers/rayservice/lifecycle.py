"""Phases around the serving flow: finalizer and deletion, validation, initializing timeout,
and the one status write.

A RayService carries the ``ray.io/rayservice-finalizer`` so its clusters are deleted before it
goes (KubeRay #4807). Validation is memoised per (uid, generation, annotations) so a steady
RayService costs no re-validation; an invalid one gets ``Ready=False/ValidationFailed`` and a
Warning once per message, and is not requeued (the spec edit that fixes it wakes it).
"""

from __future__ import annotations

import copy
from typing import Any

from controllers import constants as c
from controllers.api.validation import parse_initializing_timeout, validate_rayservice
from controllers.common.finalizers import finalizer_update
from controllers.common.invalid import invalid_report
from controllers.common.last_write import remember_write
from controllers.common.objects import annotations_of, generation_of
from controllers.constants import RAYSERVICES
from controllers.rayservice.clusters import delete_cluster, owned_clusters
from controllers.rayservice.context import ServiceContext
from controllers.rayservice.status import (
    initializing_deadline_passed,
    kuberay_status_shape,
    rfc3339,
    status_differs,
)
from kuberay_py.client import NotFound
from kuberay_py.objects import Obj

__all__ = [
    "check_initializing_timeout",
    "ensure_finalizer",
    "finalize",
    "report_invalid",
    "validate",
    "write_status",
]


async def finalize(ctx: ServiceContext) -> None:
    """Delete every owned RayCluster, then drop the finalizer (KubeRay #4807)."""
    clusters = owned_clusters(ctx)
    for cluster in clusters:
        if not cluster["metadata"].get("deletionTimestamp"):
            await delete_cluster(ctx, cluster)
    if clusters:
        return  # the RayCluster delete events wake us up again
    if c.RAYSERVICE_FINALIZER in (ctx.svc["metadata"].get("finalizers") or []):
        try:
            body = finalizer_update("RayService", ctx.svc, remove=c.RAYSERVICE_FINALIZER)
            await ctx.deps.client.update(RAYSERVICES, body)
        except NotFound:
            pass
    ctx.memory.forget(ctx.ref.key)


async def ensure_finalizer(ctx: ServiceContext) -> None:
    """Add the finalizer with KubeRay's typed whole-object Update.

    On a hand-written spec that write bumps ``generation`` (KubeRay's e2e test pins 2 right after
    creation), so the working status observes the written object's generation.
    """
    if c.RAYSERVICE_FINALIZER in (ctx.svc["metadata"].get("finalizers") or []):
        return
    body = finalizer_update("RayService", ctx.svc, add=c.RAYSERVICE_FINALIZER)
    updated: Obj = await ctx.deps.client.update(RAYSERVICES, body)
    remember_write(ctx.memo, ctx.svc, updated)  # until the watch shows the finalizer
    ctx.svc = updated
    ctx.status["observedGeneration"] = generation_of(ctx.svc)


def validate(ctx: ServiceContext) -> list[Any]:
    """Semantic validation, memoised per (uid, generation, annotations): reconciles stay cheap."""
    meta = ctx.svc["metadata"]
    token = (meta.get("uid"), meta.get("generation"), tuple(sorted(annotations_of(ctx.svc).items())))
    memo = ctx.memo
    if memo.validated is not None and memo.validated[0] == token:
        return memo.validated[1]
    errors = list(
        validate_rayservice(
            ctx.svc,
            incremental_upgrade=ctx.deps.options.incremental_upgrade,
            gates=ctx.deps.options.cluster_gates,
        )
    )
    memo.validated = (token, errors)
    return errors


def report_invalid(ctx: ServiceContext, errors: list[Any]) -> None:
    """Warning event + ``Ready=False/ValidationFailed`` in the working status."""
    report = invalid_report(c.CRD_RAYSERVICE, ctx.svc, errors)
    ctx.warn(report.reason, report.event)
    ctx.set_condition(c.COND_RAYSERVICE_READY, "False", c.REASON_VALIDATION_FAILED, report.message)
    ctx.status["serviceStatus"] = ""


def check_initializing_timeout(ctx: ServiceContext) -> bool:
    """``ray.io/initializing-timeout``: fail for good if never Ready in time, else wake at the end.

    True when it fired this round: the clusters are dropped from the status (their clean-up
    starts next round) and no new cluster may be prepared.
    """
    value = annotations_of(ctx.svc).get(c.RAYSERVICE_INITIALIZING_TIMEOUT_ANNOTATION_KEY)
    if not value:
        return False
    try:
        timeout = parse_initializing_timeout(value)
    except ValueError:
        return False  # validation reports it
    left = initializing_deadline_passed(ctx.status, timeout, ctx.deps.clock.utcnow())
    if left is None:
        return False
    if left > 0:
        ctx.requeue.at(left)
        return False
    message = f"RayService failed to become ready within the configured timeout of {value}"
    ctx.status["activeServiceStatus"] = {}
    ctx.status["pendingServiceStatus"] = {}
    ctx.set_condition(c.COND_RAYSERVICE_READY, "False", c.REASON_INITIALIZING_TIMEOUT, message)
    ctx.warn(c.EVENT_RAYSERVICE_INITIALIZING_TIMEOUT, message)
    ctx.requeue.at(ctx.deps.options.serve_poll_interval)  # the clean-up of its clusters starts next
    return True


async def write_status(ctx: ServiceContext) -> None:
    """The reconcile's one status write, only when something compared changed.

    A 409 (the cache lagged behind a write) is raised to the reconciler.
    """
    if not status_differs(ctx.svc.get("status"), ctx.status):
        return
    ctx.status["lastUpdateTime"] = rfc3339(ctx.deps.clock.utcnow())
    body = copy.deepcopy(ctx.svc)
    body["status"] = kuberay_status_shape(ctx.status)
    updated: Obj = await ctx.deps.client.update_status(RAYSERVICES, body)
    remember_write(ctx.memo, ctx.svc, updated)
    ctx.svc = updated
