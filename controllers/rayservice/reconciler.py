"""The RayService reconciler: load, build one context, run the phases in order, write status once.

Phases (KubeRay's flow, §3.1 of docs/reference/behaviour.md), each a function over the
:class:`~controllers.rayservice.context.ServiceContext`:

1. :mod:`.lifecycle` -- deletion and the finalizer, validation (the object itself comes from
   ``common.last_write.load``: the cached one, or our newer write while the cache lags, and
   nothing when ``managedBy`` names another controller);
2. :mod:`.suspend` -- suspend, or resume after one;
3. :mod:`.clusters` -- delete dangling clusters, create the pending one, update in place;
4. :mod:`.serving` -- the heads' serve labels, the Serve config and application statuses;
5. :mod:`.traffic` -- point the Services at the serving cluster, promote, count endpoints;
6. :mod:`.clusters` -- prepare a new cluster when the spec moved on (created after the write);
   with ``NewClusterWithIncrementalUpgrade``, :mod:`.incremental_phase` runs steps 4-6 instead;
7. conditions (:mod:`.status`), the initializing timeout, and the one status write.

How this differs from KubeRay's 2-second loop: a reconcile never waits on a head proxy (it reads the
shared :class:`~controllers.ray.health.HeadProxyHealthChecker`'s latest result), it writes status
only when something meaningful changed, and it asks to be requeued only while something is in
progress (Serve applications not yet RUNNING, a deletion deadline ahead). Everything else arrives
through watches (see :mod:`.setup`).
"""

from __future__ import annotations

import copy
import zlib
from typing import cast

from controllers import constants as c
from controllers.common.last_write import load
from controllers.common.objects import generation_of
from controllers.common.scope import Deps
from controllers.ray.dashboard import DashboardClientFactory
from controllers.ray.health import HeadProxyHealthChecker
from controllers.rayservice.clusters import (
    clean_up_dangling_clusters,
    create_cluster,
    plan_new_cluster,
    reconcile_clusters,
    record_cluster_statuses,
)
from controllers.rayservice.context import ServiceContext
from controllers.rayservice.gateway_api import GatewayAPI
from controllers.rayservice.incremental_phase import (
    create_pending_cluster,
    is_incremental,
    reconcile_incremental,
)
from controllers.rayservice.lifecycle import (
    check_initializing_timeout,
    ensure_finalizer,
    finalize,
    report_invalid,
    validate,
    write_status,
)
from controllers.rayservice.memory import Memory, ServiceMemo
from controllers.rayservice.options import COND_SERVE_CONFIG_VALID, SERVICE_NAME_LABEL, RayServiceOptions
from controllers.rayservice.serving import serve_applications, sync_head_label
from controllers.rayservice.shapes import RayServiceStatus, cluster_names
from controllers.rayservice.status import calculate_conditions, is_initializing_timeout
from controllers.rayservice.suspend import driving, resume, suspend
from controllers.rayservice.traffic import count_endpoints, promotion_target, route_traffic
from kuberay_py.client import Conflict
from kuberay_py.controller import Request, Result
from kuberay_py.log import get_logger
from kuberay_py.objects import Obj

__all__ = [
    "COND_SERVE_CONFIG_VALID",
    "SERVICE_NAME_LABEL",
    "RayServiceOptions",
    "RayServiceReconciler",
    "refresh_delay",
]

log = get_logger(__name__)


class RayServiceReconciler:
    def __init__(
        self,
        deps: Deps[RayServiceOptions],
        dashboard_factory: DashboardClientFactory,
        checker: HeadProxyHealthChecker,
        *,
        gateway_api: GatewayAPI | None = None,
    ) -> None:
        self.deps = deps
        self.dashboards = dashboard_factory
        self.checker = checker
        self.memory = Memory()
        self.gateway_api = gateway_api or GatewayAPI(deps.client, lambda: None)

    def context(self, svc: Obj, memo: ServiceMemo) -> ServiceContext:
        """A context for one reconcile of ``svc``, its status copied as the working status."""
        status = cast(RayServiceStatus, copy.deepcopy(svc.get("status") or {}))
        status["observedGeneration"] = generation_of(svc)
        return ServiceContext(
            self.deps, self.dashboards, self.checker, self.memory, memo, svc, status,
            gateway_api=self.gateway_api,
        )  # fmt: skip

    async def reconcile(self, request: Request) -> Result:
        # Acting on a stale active/pending pair could create a second pending cluster or delete
        # the one just promoted: ``load`` hands out our own last status write while the cache
        # predates it.
        cached = self.deps.cache.get(c.RAYSERVICES, request.name, request.namespace)
        loaded = load(cached, request, self.memory)
        if loaded is None:
            return Result()
        svc, memo = loaded
        ctx = self.context(svc, memo)
        if svc["metadata"].get("deletionTimestamp"):
            await finalize(ctx)
            return Result()
        await ensure_finalizer(ctx)
        errors = validate(ctx)
        if errors:
            report_invalid(ctx, errors)
            await write_status(ctx)  # a 409 raises: retried rate-limited
            return Result()  # no requeue: the spec edit that fixes it wakes us

        new_cluster = await self.serve(ctx)
        try:
            await write_status(ctx)
        except Conflict:
            # The cache lagged behind a write (ours or someone's); a status-only change may not
            # come back through the predicates, so retry on our own, rate-limited.
            log.debug("status write conflicted; retrying with a fresh object")
            return Result(requeue=True)
        if new_cluster is not None and is_incremental(ctx):
            await create_pending_cluster(ctx, new_cluster)
        elif new_cluster is not None:
            await create_cluster(ctx, new_cluster)
        return ctx.requeue.result()

    async def serve(self, ctx: ServiceContext) -> str | None:
        """The serving phases on a valid RayService; returns a cluster to create after the write."""
        if driving(ctx):
            if await suspend(ctx) and not (ctx.svc.get("spec") or {}).get("suspend"):
                ctx.requeue.at(0)  # suspend was lifted while it ran to completion: resume next
            return None
        resume(ctx)
        await clean_up_dangling_clusters(ctx)
        if is_initializing_timeout(ctx.status):
            # Terminal (KubeRay): only the clean-up of the clusters it no longer names goes on, and
            # KubeRay writes no status, so observedGeneration stays at the generation that timed out.
            stored = (ctx.svc.get("status") or {}).get("observedGeneration")
            if stored is not None:
                ctx.status["observedGeneration"] = int(stored)
            return None
        self.memory.serve_configs.retain(ctx.ref.key, set(cluster_names(ctx.status)))

        active, pending = await reconcile_clusters(ctx)
        for cluster in (active, pending):
            await sync_head_label(ctx, cluster)
        if is_incremental(ctx):
            new_cluster = await reconcile_incremental(ctx, active, pending)
            if self.deps.options.status_refresh_interval:
                ctx.requeue.at(refresh_delay(ctx.ref.key, self.deps.options.status_refresh_interval))
            return new_cluster
        active_serve, pending_serve = await serve_applications(ctx, active, pending)
        target = promotion_target(ctx, active, pending, active_serve, pending_serve)
        promoted = target is not None and await route_traffic(ctx, target)
        if promoted:
            active, pending = pending, None
        new_cluster = plan_new_cluster(ctx, active, pending, pending_is_serving=promoted)
        record_cluster_statuses(ctx, active, pending if new_cluster is None else None)
        count_endpoints(ctx)
        calculate_conditions(ctx.status, generation=ctx.generation, now=ctx.deps.clock.utcnow())
        if check_initializing_timeout(ctx):
            new_cluster = None

        if promoted or active_serve.in_progress or pending_serve.in_progress:
            # after a promotion: the old cluster's deletion
            ctx.requeue.at(self.deps.options.serve_poll_interval)
        elif self.deps.options.status_refresh_interval:
            ctx.requeue.at(refresh_delay(ctx.ref.key, self.deps.options.status_refresh_interval))
        return new_cluster


def refresh_delay(key: str, interval: float) -> float:
    """The idle refresh, spread over 90-100 % of ``interval`` per RayService (stable per key), so
    services created or resynced together do not all hit their dashboards in the same second."""
    return interval * (0.9 + 0.1 * (zlib.crc32(key.encode()) % 1000) / 1000)
