"""The RayCluster reconciler: read the cache, write the difference, nothing when nothing changed.

Phases, in order (KubeRay's ``rayClusterReconcile``), each a function over one
:class:`~controllers.raycluster.context.ClusterContext`:

1. load -- the RayCluster from the cache (the kit's ``load``); gone means :meth:`Memory.forget`.
2. skip -- ``spec.managedBy`` names another controller (e.g. MultiKueue): ``load`` answers None.
3. validate -- an invalid spec gets a Warning event and ``status.reason``; nothing is deleted and
   the key is not requeued (a spec change re-triggers it).
4. finalize -- GCS-FT Redis cleanup on deletion (:mod:`.deletion`), or add the finalizer.
5. children -- autoscaler RBAC, Ingress, Services (:mod:`.children`).
6. pods -- head, worker groups, suspend, behind create/delete expectations (:mod:`.pods`).
7. status -- computed from the cache (:mod:`.status`), written once, only when a compared field
   differs (:mod:`.status_write`).

Requeue: watch-driven (owned Pods/Services, RayCluster generation/labels/annotations), plus one
long resync (default 300 s). Errors requeue rate-limited through the controller. Phases ask the
kit's timer (``ctx.requeue``, :mod:`controllers.common.requeue`) for a wake-up: the deletion
flow's poll, a held-back status write; the only immediate requeue is the one that moves a suspend
from "Suspending recorded" to "delete the Pods".
Wiring (watches, cache selectors and transforms) is in :mod:`.setup`.
"""

from __future__ import annotations

from controllers import constants as C
from controllers.api.errors import FieldError
from controllers.api.validation import validate_raycluster
from controllers.batchscheduler import SchedulerError
from controllers.common import cluster as common
from controllers.common.last_write import load, remember_write
from controllers.common.scope import Deps
from controllers.raycluster.children import reconcile_children, service
from controllers.raycluster.context import ClusterContext
from controllers.raycluster.deletion import add_finalizer, finalize, needs_finalizer
from controllers.raycluster.gcs_embedded import reconcile_gcs_storage
from controllers.raycluster.memory import Memory
from controllers.raycluster.mtls import tls_enabled
from controllers.raycluster.mtls_pki import CertManager, PKINotReady, check_secrets_ready, wants_pods
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.pods import ReplicaFailure, reconcile_pods
from controllers.raycluster.status import compute_status
from controllers.raycluster.status_write import (
    became_suspending,
    coalesce_delay,
    report_invalid,
    write_status,
)
from kuberay_py.client import ApiError
from kuberay_py.client.resources import PODS
from kuberay_py.clock import format_rfc3339
from kuberay_py.controller import Expectations, Request, Result
from kuberay_py.log import get_logger
from kuberay_py.objects import Obj

__all__ = ["RayClusterReconciler"]

log = get_logger(__name__)


class RayClusterReconciler:
    def __init__(
        self,
        deps: Deps[RayClusterOptions],
        *,
        expectations: Expectations | None = None,
        cert_manager: CertManager | None = None,
    ) -> None:
        self.deps = deps
        self.expectations = expectations or Expectations(clock=deps.clock)
        self.memory = Memory(self.expectations)
        self.cert_manager = cert_manager or CertManager(deps.client)

    def _cached_pods(self, request: Request) -> list[Obj]:
        return self.deps.cache.list(PODS, request.namespace, labels={C.RAY_CLUSTER_LABEL_KEY: request.name})

    async def reconcile(self, request: Request) -> Result:
        cached = self.deps.cache.get(C.RAYCLUSTERS, request.name, request.namespace)
        loaded = load(cached, request, self.memory)
        if loaded is None:
            return Result()
        cluster, memo = loaded
        options = self.deps.options
        ctx = ClusterContext(
            self.deps,
            self.expectations,
            memo,
            cluster,
            self._cached_pods(request),
            creates_left=options.worker_creates_per_pass or None,
        )
        errors = validate_raycluster(cluster, gates=options.gates)
        if not errors and tls_enabled(cluster, options) and not await self.cert_manager.available():
            errors = [FieldError("spec.tlsOptions", C.CERT_MANAGER_REQUIRED)]
        if errors:
            await report_invalid(ctx, errors)
            return Result()
        if cluster["metadata"].get("deletionTimestamp"):
            memo.forget_children()
            await finalize(ctx)
            return ctx.requeue.result()
        if needs_finalizer(cluster, options) and C.GCS_FT_REDIS_CLEANUP_FINALIZER not in (
            cluster["metadata"].get("finalizers") or []
        ):
            ctx.cluster = await add_finalizer(self.deps.client, cluster)
            remember_write(memo, cluster, ctx.cluster)  # until the watch shows the finalizer

        failure: ReplicaFailure | None = None
        error: Exception | None = None
        try:
            await reconcile_children(ctx)
            await reconcile_gcs_storage(ctx)
            if tls_enabled(ctx.cluster, options) and wants_pods(ctx):
                await check_secrets_ready(self.deps.client, ctx.cluster)  # no Pod before its certificate
            await reconcile_pods(ctx)
        except ReplicaFailure as exc:
            failure, error = exc, exc
        # SchedulerError: the batch scheduler said retry; PKINotReady: the mTLS certificates are not issued.
        except (ApiError, SchedulerError, PKINotReady) as exc:
            error = exc

        # Status always reflects what the cache shows, even after a failed phase: read again, as
        # KubeRay's calculateStatus lists again, so Pods this reconcile created that the watch has
        # already delivered are in it.
        pods = self._cached_pods(request)
        new_status = compute_status(
            ctx.cluster,
            pods,
            service(ctx, common.head_service_name(ctx.cluster)),
            now=format_rfc3339(self.deps.clock.utcnow()),
            replica_failure=(failure.reason, failure.message) if failure else None,
            reconcile_failed=error is not None,
            with_conditions=options.gates.status_conditions,
        )
        suspending_now = became_suspending(ctx.cluster, new_status)
        defer = coalesce_delay(ctx, new_status, urgent=error is not None)
        # Pods this reconcile created or deleted whose watch events have not arrived yet are not in
        # that picture: writing it now would be followed by a second write (head podName,
        # HeadPodReady's reason) as soon as they show up. Their watch events requeue this
        # cluster, and that reconcile writes the status once, complete.
        if defer is None and (error is not None or self.expectations.satisfied(ctx.ref.key)):
            await write_status(ctx, new_status)
        if error is not None:
            raise error
        if suspending_now:
            ctx.requeue.immediately()
        if defer is not None:
            ctx.requeue.at(defer)
        return ctx.requeue.result(default=options.resync_period)
