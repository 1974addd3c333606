"""The RayCluster reconciler: read the cache, write the difference, nothing when nothing changed.

Phases, in order (KubeRay's ``rayClusterReconcile``):

1. load — the RayCluster from the cache; gone means forget its expectations.
2. skip — ``spec.managedBy`` names another controller (e.g. MultiKueue).
3. validate — an invalid spec gets a Warning event and ``status.reason``; nothing is deleted and
   the key is not requeued (a spec change re-triggers it).
4. finalize — GCS-FT Redis cleanup on deletion, or add the finalizer.
5. children — autoscaler RBAC, Ingress, Services.
6. pods — head, worker groups, suspend, behind create/delete expectations.
7. status — computed from the cache, written only when a compared field differs.

Requeue: watch-driven (owned Pods/Services, RayCluster generation/labels/annotations), plus one
long resync (default 300 s). Errors requeue rate-limited through the controller. The only short
requeue is the one that moves a suspend from "Suspending recorded" to "delete the Pods".
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any, Protocol

from controllers import constants as C
from controllers.api.validation import validate_raycluster
from controllers.raycluster import common
from controllers.raycluster.children import ChildPhase
from controllers.raycluster.deletion import add_finalizer, finalize, needs_finalizer
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.pod_cache import slim_pod
from controllers.raycluster.pods import PodPhase, ReplicaFailure
from controllers.raycluster.status import compute_status, find_condition, status_differs
from kuberay_py.client import ApiError, Client, Conflict, NotFound, Resource
from kuberay_py.client.resources import JOBS, PODS, SERVICES
from kuberay_py.clock import Clock, RealClock, format_rfc3339
from kuberay_py.controller import (
    AnnotationsChanged,
    Expectations,
    GenerationChanged,
    LabelsChanged,
    Request,
    Result,
    or_,
)
from kuberay_py.log import get_logger

__all__ = ["CONTROLLER_NAME", "RayClusterReconciler", "cache_selectors", "cache_transforms", "setup"]

CONTROLLER_NAME = "raycluster-controller"
log = get_logger("controllers.raycluster")


class Recorder(Protocol):
    def event(self, obj: dict[str, Any], type_: Any, reason: str, message: str) -> None: ...


class CacheReader(Protocol):
    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any] | None: ...

    def list(
        self, res: Resource, namespace: str | None = None, *, labels: dict[str, str] | None = None
    ) -> list[dict[str, Any]]: ...


def cache_selectors() -> dict[Resource, str]:
    """Label selectors for the manager's cache: only Ray Pods and our own Jobs (KubeRay #4761)."""
    return {PODS: C.POD_CACHE_SELECTOR, JOBS: C.JOB_CACHE_SELECTOR}


def cache_transforms() -> dict[Resource, Callable[[dict[str, Any]], dict[str, Any]]]:
    """Cache transforms for the manager: cached Pods keep only what the controllers read.

    Cached Pods are then partial (see :mod:`controllers.raycluster.pod_cache`): Pods are only
    ever patched or deleted, never updated from the cache.
    """
    return {PODS: slim_pod}


def _now_iso(clock: Clock) -> str:
    return format_rfc3339(clock.utcnow())


class RayClusterReconciler:
    def __init__(
        self,
        client: Client,
        cache: CacheReader,
        recorder: Recorder,
        *,
        clock: Clock | None = None,
        options: RayClusterOptions | None = None,
        expectations: Expectations | None = None,
    ) -> None:
        self.client = client
        self.cache = cache
        self.recorder = recorder
        self.clock = clock or RealClock()
        self.options = options or RayClusterOptions()
        self.expectations = expectations or Expectations(clock=self.clock)
        self._children = ChildPhase(client, cache, recorder, self.options)
        # key -> (resourceVersion we wrote over, object the API returned): our own status writes,
        # used until the cache catches up so a lagging watch causes no 409 and no duplicate write.
        self._written: dict[str, tuple[str, dict[str, Any]]] = {}
        # key -> monotonic time a counter-only status change was first deferred.
        self._deferred: dict[str, float] = {}
        self._pods = PodPhase(client, recorder, self.expectations, self.options)

    async def reconcile(self, request: Request) -> Result:
        key = f"{request.namespace}/{request.name}"
        cluster = self.cache.get(C.RAYCLUSTERS, request.name, request.namespace)
        if cluster is None:
            self.expectations.delete(key)
            self._children.forget_key(key)
            self._written.pop(key, None)
            self._deferred.pop(key, None)
            return Result()
        cluster = self._latest(key, cluster)
        managed_by = common.spec(cluster).get("managedBy")
        if managed_by and managed_by != "ray.io/kuberay-operator":
            log.debug("managed by another controller", managed_by=managed_by)
            return Result()
        pods = self.cache.list(PODS, request.namespace, labels={C.RAY_CLUSTER_LABEL_KEY: request.name})

        errors = validate_raycluster(cluster)
        if errors:
            return await self._invalid(cluster, pods, errors)

        if cluster["metadata"].get("deletionTimestamp"):
            self._children.forget(cluster["metadata"]["uid"])
            delay = await finalize(self.client, self.recorder, self.clock, self.options, cluster, pods)
            return Result(requeue_after=delay) if delay is not None else Result()
        if needs_finalizer(cluster, self.options) and C.GCS_FT_REDIS_CLEANUP_FINALIZER not in (
            cluster["metadata"].get("finalizers") or []
        ):
            old_rv = str(cluster["metadata"].get("resourceVersion", ""))
            cluster = await add_finalizer(self.client, cluster)
            self._written[key] = (old_rv, cluster)  # until the watch shows the finalizer

        failure: ReplicaFailure | None = None
        error: Exception | None = None
        try:
            await self._children.reconcile(cluster)
            await self._pods.reconcile(cluster, pods)
        except ReplicaFailure as exc:
            failure, error = exc, exc
        except ApiError as exc:
            error = exc

        # Status always reflects what the cache shows, even after a failed phase.
        head_svc = self._children.service(cluster, common.head_service_name(cluster))
        new_status = compute_status(
            cluster,
            pods,
            head_svc,
            now=_now_iso(self.clock),
            replica_failure=(failure.reason, failure.message) if failure else None,
            reconcile_failed=error is not None,
        )
        suspending_now = self._became_suspending(cluster, new_status)
        defer = self._coalesce_delay(key, cluster.get("status"), new_status, urgent=error is not None)
        if defer is None:
            await self._write_status(key, cluster, new_status)
        if error is not None:
            raise error
        if suspending_now:
            return Result(requeue=True)
        if defer is not None:
            return Result(requeue_after=defer)
        return Result(requeue_after=self.options.resync_period)

    def _latest(self, key: str, cached: dict[str, Any]) -> dict[str, Any]:
        """The cached RayCluster, or our own newer write of it while the watch lags behind."""
        written = self._written.get(key)
        if written is None:
            return cached
        over_rv, obj = written
        if cached["metadata"].get("resourceVersion") == over_rv:
            return obj
        self._written.pop(key, None)  # the cache moved on (our write or someone else's)
        return cached

    def _coalesce_delay(
        self, key: str, old: dict[str, Any] | None, new: dict[str, Any], *, urgent: bool
    ) -> float | None:
        """Seconds to hold back a status write that only moves counters, head details or condition
        reasons/messages, else None.

        Workers turning Ready one by one would otherwise cost one write each; state, reason,
        conditions (HeadPodReady, Provisioned, …), desired counts and generation changes are always
        written at once.
        """
        window = self.options.status_coalesce_seconds
        if urgent or window <= 0 or not status_differs(old, new):
            self._deferred.pop(key, None)
            return None
        soft = ("readyWorkerReplicas", "availableWorkerReplicas", "head", "endpoints", "conditions")

        def hard(status: dict[str, Any]) -> dict[str, Any]:
            out = {k: v for k, v in status.items() if k not in soft}
            # A condition flipping status is urgent; a new reason or message alone is not.
            out["conditions"] = sorted(
                (c.get("type"), c.get("status")) for c in status.get("conditions") or []
            )
            return out

        strip_old, strip_new = hard(old or {}), hard(new)
        if status_differs(strip_old, strip_new):
            self._deferred.pop(key, None)
            return None
        now = self.clock.now()
        since = self._deferred.setdefault(key, now)
        remaining = since + window - now
        if remaining <= 0:
            self._deferred.pop(key, None)
            return None
        return remaining

    @staticmethod
    def _became_suspending(cluster: dict[str, Any], new_status: dict[str, Any]) -> bool:
        before = find_condition((cluster.get("status") or {}).get("conditions"), C.COND_RAYCLUSTER_SUSPENDING)
        after = find_condition(new_status.get("conditions"), C.COND_RAYCLUSTER_SUSPENDING)
        return (after or {}).get("status") == "True" and (before or {}).get("status") != "True"

    def _status_body(self, cluster: dict[str, Any], new_status: dict[str, Any]) -> dict[str, Any]:
        """A ``/status`` PUT body: the cached object's metadata (its resourceVersion makes a stale
        cache a 409, as controller-runtime's ``Status().Update``) with the new status, stamped now."""
        new_status["lastUpdateTime"] = _now_iso(self.clock)
        return {
            "apiVersion": C.RAYCLUSTERS.api_version,
            "kind": C.RAYCLUSTERS.kind,
            "metadata": copy.deepcopy(cluster["metadata"]),
            "spec": cluster.get("spec"),
            "status": new_status,
        }

    async def _write_status(self, key: str, cluster: dict[str, Any], new_status: dict[str, Any]) -> None:
        if not status_differs(cluster.get("status"), new_status):
            return
        try:
            written = await self.client.update_status(C.RAYCLUSTERS, self._status_body(cluster, new_status))
        except NotFound:
            return
        except Conflict:
            self._written.pop(key, None)
            # Our cached copy is stale: the newer object is on its way through the watch.
            log.debug("status write conflicted; a newer RayCluster will be reconciled")
            raise
        self._written[key] = (str(cluster["metadata"].get("resourceVersion", "")), written)

    async def _invalid(
        self, cluster: dict[str, Any], pods: list[dict[str, Any]], errors: list[Any]
    ) -> Result:
        first = errors[0]
        reason = {
            "metadata": C.EVENT_INVALID_RAYCLUSTER_METADATA,
            "status": C.EVENT_INVALID_RAYCLUSTER_STATUS,
        }.get(first.category, C.EVENT_INVALID_RAYCLUSTER_SPEC)
        message = "; ".join(str(e) for e in errors)
        status = cluster.get("status") or {}
        if status.get("reason") != message or status.get("observedGeneration") != cluster["metadata"].get(
            "generation"
        ):
            self.recorder.event(cluster, C.WARNING, reason, message)
            new_status = copy.deepcopy(status)
            new_status["reason"] = message
            new_status["observedGeneration"] = cluster["metadata"].get("generation", 0)
            try:
                await self.client.update_status(C.RAYCLUSTERS, self._status_body(cluster, new_status))
            except NotFound:
                pass
        del pods
        return Result()


def setup(
    manager: Any,
    *,
    max_concurrent_reconciles: int = 1,
    options: RayClusterOptions | None = None,
    resync_period: float | None = None,
    clock: Clock | None = None,
) -> RayClusterReconciler:
    """Register the RayCluster controller with a :class:`kuberay_py.manager.Manager`.

    The manager's cache should be built with :func:`cache_selectors` so only Ray Pods are cached,
    and :func:`cache_transforms` so each keeps only the fields the controllers read.
    """
    opts = options or RayClusterOptions.from_env()
    if resync_period is not None:
        if resync_period <= 0:
            raise ValueError(f"resync_period must be > 0, got {resync_period}")
        opts = dataclasses.replace(opts, resync_period=resync_period)
    expectations = Expectations(clock=clock)
    reconciler = RayClusterReconciler(
        manager.client,
        manager.cache,
        manager.event_recorder(CONTROLLER_NAME),
        clock=clock,
        options=opts,
        expectations=expectations,
    )
    manager.cache.informer_for(PODS).add_event_handler(expectations)
    (
        manager.controller(CONTROLLER_NAME)
        .for_(C.RAYCLUSTERS, predicates=[or_(GenerationChanged(), LabelsChanged(), AnnotationsChanged())])
        .owns(PODS)
        .owns(SERVICES)
        .with_options(max_concurrent_reconciles=max_concurrent_reconciles)
        .complete(reconciler)
    )
    return reconciler
