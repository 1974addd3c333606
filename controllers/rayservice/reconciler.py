"""The RayService reconciler: a short list of named phases over cached state.

Phases, in order (KubeRay's flow, §3.1 of BEHAVIOUR.md): finalizer and deletion, validation,
dangling-cluster cleanup, pending-cluster creation and in-place updates, head serve labels, Serve
config submission and status, Service switching and promotion, preparing a new cluster, status.

How this differs from KubeRay's 2-second loop: a reconcile never waits on a head proxy (it reads the
shared :class:`~controllers.ray.health.HeadProxyHealthChecker`'s latest result), it writes status
only when something meaningful changed, and it asks to be requeued only while something is in
progress (Serve applications not yet RUNNING, a deletion deadline ahead). Everything else arrives
through watches: RayService, its RayClusters and Services, the serve Service's EndpointSlices, the
head Pods, and the checker's "health changed" callback.
"""

from __future__ import annotations

import copy
import zlib
from typing import Any

from controllers import constants as c
from controllers.api.validation import parse_initializing_timeout, validate_rayservice
from controllers.common.cache import CacheReader
from controllers.constants import RAYCLUSTERS, RAYSERVICES
from controllers.ray import metrics as ray_metrics
from controllers.ray.dashboard import DashboardClientFactory
from controllers.ray.health import HeadProxyHealthChecker
from controllers.rayservice.cluster import (
    cluster_spec_of,
    generate_cluster_name,
    owned_cluster_labels,
)
from controllers.rayservice.hashing import (
    is_zero_downtime_enabled,
    should_prepare_new_cluster,
)
from controllers.rayservice.phase_base import (
    COND_SERVE_CONFIG_VALID,
    MANAGED_BY_KUBERAY,
    SERVICE_NAME_LABEL,
    EventRecorderLike,
    RayServiceOptions,
    RequeueTimer,
    _cluster_names,
    _name,
    log,
)
from controllers.rayservice.serve import ServeConfigCache
from controllers.rayservice.serving_phases import ServingPhases, _ServeResult
from controllers.rayservice.status import (
    calculate_conditions,
    initializing_deadline_passed,
    is_initializing_timeout,
    kuberay_status_shape,
    rfc3339,
    set_condition,
    status_differs,
)
from controllers.rayservice.suspend_phase import SuspendPhase
from kuberay_py.client import Client, Conflict, NotFound
from kuberay_py.clock import Clock, RealClock
from kuberay_py.controller import Request, Result

__all__ = [
    "COND_SERVE_CONFIG_VALID",
    "SERVICE_NAME_LABEL",
    "RayServiceOptions",
    "RayServiceReconciler",
    "refresh_delay",
]


class RayServiceReconciler(SuspendPhase, ServingPhases):
    def __init__(
        self,
        client: Client,
        cache: CacheReader,
        recorder: EventRecorderLike,
        dashboard_factory: DashboardClientFactory,
        checker: HeadProxyHealthChecker,
        *,
        clock: Clock | None = None,
        options: RayServiceOptions | None = None,
    ) -> None:
        self.client = client
        self.cache = cache
        self.recorder = recorder
        self.dashboards = dashboard_factory
        self.checker = checker
        self.clock: Clock = clock or RealClock()
        self.options = options or RayServiceOptions()
        self.serve_configs = ServeConfigCache()
        self._written: dict[str, tuple[str, dict[str, Any]]] = {}  # key -> (resourceVersion, status)
        self._warned: dict[tuple[str, str], str] = {}  # (key, reason) -> last message (no event spam)
        self._rejected: dict[tuple[str, str], str] = {}  # (key, cluster) -> config Ray answered 4xx to
        self._tokens: dict[str, str] = {}  # head Pod uid -> Ray auth token
        self._valid: dict[str, tuple[Any, list[Any]]] = {}  # key -> (what was validated, errors)

    # ------------------------------------------------------------------------------------------
    async def reconcile(self, request: Request) -> Result:
        key = f"{request.namespace}/{request.name}"
        svc = await self._fresh_rayservice(request, key)
        if svc is None:
            self._forget(key)
            return Result()
        spec = svc.get("spec") or {}
        if spec.get("managedBy") not in (None, "", MANAGED_BY_KUBERAY):
            return Result()
        if svc["metadata"].get("deletionTimestamp"):
            return await self._finalize(svc, key)
        if c.RAYSERVICE_FINALIZER not in (svc["metadata"].get("finalizers") or []):
            svc = await self._add_finalizer(svc)

        status = copy.deepcopy(svc.get("status") or {})
        generation = int(svc["metadata"].get("generation") or 0)
        status["observedGeneration"] = generation

        errors = self._validate(svc, key)
        if errors:
            return await self._invalid(svc, key, status, errors, generation)

        requeue = RequeueTimer()
        if spec.get("suspend"):
            await self._suspend(svc, status, generation)
            return await self._write_and_requeue(svc, key, status, requeue)
        self._resume(status, generation)
        if is_initializing_timeout(status):
            # Terminal (KubeRay): only the clean-up of the clusters it no longer names goes on.
            await self._clean_up_dangling_clusters(svc, status, requeue)
            return await self._write_and_requeue(svc, key, status, requeue)
        await self._clean_up_dangling_clusters(svc, status, requeue)
        self.serve_configs.retain(key, set(_cluster_names(status)))

        active, pending = await self._reconcile_clusters(svc, status)
        for cluster in (active, pending):
            await self._sync_head_label(svc, cluster)

        pending_serve = _ServeResult()
        active_serve = _ServeResult()
        goal = cluster_spec_of(svc)
        zero_downtime = is_zero_downtime_enabled(spec, dict(self.options.env))
        if pending is not None:
            pending_serve = await self._reconcile_serve(svc, key, status, pending)
        elif active is not None and not should_prepare_new_cluster(
            active, None, goal, pending_is_serving=False, zero_downtime=zero_downtime
        ):
            active_serve = await self._reconcile_serve(svc, key, status, active)
        _put_apps(status, "pendingServiceStatus", pending_serve.apps)
        _put_apps(status, "activeServiceStatus", active_serve.apps)

        # Promotion needs all applications RUNNING *and* ready serve endpoints on the new cluster.
        target = None
        if pending is not None and pending_serve.ready and self._ready_serve_pods(pending) > 0:
            target = pending
        elif active is not None and active_serve.ready:
            target = active
        pending_is_serving = False
        if target is not None:
            serve_svc = await self._reconcile_services(svc, target)
            points_to = ((serve_svc or {}).get("spec") or {}).get("selector", {}).get(c.RAY_CLUSTER_LABEL_KEY)
            pending_name = (status.get("pendingServiceStatus") or {}).get("rayClusterName")
            if pending_name and points_to == pending_name:
                log.info("promoting pending cluster", old=_name(status, "active"), new=pending_name)
                status["activeServiceStatus"] = status.get("pendingServiceStatus") or {}
                status["pendingServiceStatus"] = {}
                active, pending = pending, None
                pending_is_serving = True

        prepare_name = None
        if should_prepare_new_cluster(
            active, pending, goal, pending_is_serving=pending_is_serving, zero_downtime=zero_downtime
        ):
            prepare_name = generate_cluster_name(svc["metadata"]["name"])
            status["pendingServiceStatus"] = {"rayClusterName": prepare_name}
            log.info("preparing a new pending RayCluster", cluster=prepare_name)

        _put_cluster_status(status, "activeServiceStatus", active)
        _put_cluster_status(status, "pendingServiceStatus", pending if prepare_name is None else None)
        self._count_endpoints(svc, status)
        calculate_conditions(status, generation=generation, now=self.clock.utcnow())
        if self._initializing_timed_out(svc, key, status, generation, requeue):
            prepare_name = None
        try:
            svc = await self._write_status(svc, key, status)
        except Conflict:
            # The cache lagged behind a write (ours or someone's); a status-only change may not
            # come back through the predicates, so retry on our own, rate-limited.
            log.debug("status write conflicted; retrying with a fresh object")
            return Result(requeue=True)
        if prepare_name is not None:
            await self._create_cluster(svc, prepare_name)

        if (pending_serve.in_progress or active_serve.in_progress) and not pending_is_serving:
            requeue.at(self.options.serve_poll_interval)
        elif pending_is_serving:
            requeue.at(self.options.serve_poll_interval)  # schedule the old cluster's deletion next
        elif self.options.status_refresh_interval:
            requeue.at(refresh_delay(key, self.options.status_refresh_interval))
        return Result(requeue_after=requeue.delay)

    # -- phases ---------------------------------------------------------------------------------
    def _initializing_timed_out(
        self, svc: dict[str, Any], key: str, status: dict[str, Any], generation: int, requeue: RequeueTimer
    ) -> bool:
        """``ray.io/initializing-timeout``: fail for good if never Ready in time, else wake at the end."""
        value = (svc["metadata"].get("annotations") or {}).get(
            c.RAYSERVICE_INITIALIZING_TIMEOUT_ANNOTATION_KEY
        )
        if not value:
            return False
        try:
            timeout = parse_initializing_timeout(value)
        except ValueError:
            return False  # validation reports it
        now = self.clock.utcnow()
        left = initializing_deadline_passed(status, timeout, now)
        if left is None:
            return False
        if left > 0:
            requeue.at(left)
            return False
        message = f"RayService failed to become ready within the configured timeout of {value}"
        status["activeServiceStatus"] = {}
        status["pendingServiceStatus"] = {}
        set_condition(
            status.setdefault("conditions", []),
            c.COND_RAYSERVICE_READY,
            "False",
            c.REASON_INITIALIZING_TIMEOUT,
            message,
            observed_generation=generation,
            now=now,
        )
        self._warn(svc, key, c.EVENT_RAYSERVICE_INITIALIZING_TIMEOUT, message)
        requeue.at(self.options.serve_poll_interval)  # the clean-up of its clusters starts next
        return True

    async def _write_and_requeue(
        self, svc: dict[str, Any], key: str, status: dict[str, Any], requeue: RequeueTimer
    ) -> Result:
        try:
            await self._write_status(svc, key, status)
        except Conflict:
            return Result(requeue=True)
        return Result(requeue_after=requeue.delay)

    def _validate(self, svc: dict[str, Any], key: str) -> list[Any]:
        """Semantic validation, memoised per (uid, generation, annotations): reconciles stay cheap."""
        meta = svc["metadata"]
        token = (
            meta.get("uid"),
            meta.get("generation"),
            tuple(sorted((meta.get("annotations") or {}).items())),
        )
        memo = self._valid.get(key)
        if memo is not None and memo[0] == token:
            return memo[1]
        errors = list(validate_rayservice(svc))
        self._valid[key] = (token, errors)
        return errors

    async def _fresh_rayservice(self, request: Request, key: str) -> dict[str, Any] | None:
        """The cached RayService, or a live read when the cache may predate our last status write."""
        svc = self.cache.get(RAYSERVICES, request.name, request.namespace)
        if svc is None:
            return None
        written = self._written.get(key)
        if written is not None and svc["metadata"].get("resourceVersion") != written[0]:
            cached_names = _cluster_names(svc.get("status") or {})
            if cached_names != _cluster_names(written[1]):
                try:
                    live: dict[str, Any] = await self.client.get(RAYSERVICES, request.name, request.namespace)
                except NotFound:
                    return None
                return live
        return svc

    def _forget(self, key: str) -> None:
        self.serve_configs.drop(key)
        self._written.pop(key, None)
        self._valid.pop(key, None)
        for memo in (self._warned, self._rejected):
            for k in [k for k in memo if k[0] == key]:
                del memo[k]
        namespace, name = key.split("/", 1)
        for source in ("head", "worker"):
            try:
                ray_metrics.SERVE_ENDPOINTS.remove(namespace, name, source)
            except KeyError:
                pass

    async def _finalize(self, svc: dict[str, Any], key: str) -> Result:
        """Delete every owned RayCluster, then drop the finalizer (KubeRay #4807)."""
        meta = svc["metadata"]
        clusters = self.cache.list(RAYCLUSTERS, meta["namespace"], labels=owned_cluster_labels(svc))
        for cluster in clusters:
            if not cluster["metadata"].get("deletionTimestamp"):
                await self._delete_cluster(svc, cluster)
        if clusters:
            return Result()  # the RayCluster delete events wake us up again
        if c.RAYSERVICE_FINALIZER in (meta.get("finalizers") or []):
            body = copy.deepcopy(svc)
            body["metadata"]["finalizers"] = [f for f in meta["finalizers"] if f != c.RAYSERVICE_FINALIZER]
            try:
                await self.client.update(RAYSERVICES, body)
            except NotFound:
                pass
        self._forget(key)
        return Result()

    async def _add_finalizer(self, svc: dict[str, Any]) -> dict[str, Any]:
        body = copy.deepcopy(svc)
        body["metadata"]["finalizers"] = [*(svc["metadata"].get("finalizers") or []), c.RAYSERVICE_FINALIZER]
        updated: dict[str, Any] = await self.client.update(RAYSERVICES, body)
        return updated

    async def _invalid(
        self, svc: dict[str, Any], key: str, status: dict[str, Any], errors: list[Any], generation: int
    ) -> Result:
        """Warning event + ``Ready=False/ValidationFailed``; no requeue (a spec edit wakes us)."""
        message = "; ".join(str(e) for e in errors)
        reason = (
            c.EVENT_INVALID_RAYSERVICE_METADATA
            if any(getattr(e, "category", "spec") == "metadata" for e in errors)
            else c.EVENT_INVALID_RAYSERVICE_SPEC
        )
        self._warn(svc, key, reason, f"{svc['metadata']['namespace']}/{svc['metadata']['name']}: {message}")
        conditions = status.setdefault("conditions", [])
        set_condition(
            conditions,
            c.COND_RAYSERVICE_READY,
            "False",
            c.REASON_VALIDATION_FAILED,
            message,
            observed_generation=generation,
            now=self.clock.utcnow(),
        )
        status["serviceStatus"] = ""
        await self._write_status(svc, key, status)
        return Result()

    async def _write_status(self, svc: dict[str, Any], key: str, status: dict[str, Any]) -> dict[str, Any]:
        if not status_differs(svc.get("status"), status):
            return svc
        status["lastUpdateTime"] = rfc3339(self.clock.utcnow())
        body = copy.deepcopy(svc)
        body["status"] = kuberay_status_shape(status)
        updated: dict[str, Any] = await self.client.update_status(RAYSERVICES, body)
        self._written[key] = (str(updated["metadata"].get("resourceVersion")), copy.deepcopy(status))
        return updated


def refresh_delay(key: str, interval: float) -> float:
    """The idle refresh, spread over 90-100 % of ``interval`` per RayService (stable per key), so
    services created or resynced together do not all hit their dashboards in the same second."""
    return interval * (0.9 + 0.1 * (zlib.crc32(key.encode()) % 1000) / 1000)


def _put_apps(status: dict[str, Any], key: str, apps: dict[str, Any] | None) -> None:
    sub = status.get(key)
    if not sub or not sub.get("rayClusterName") or apps is None:
        return
    sub["applicationStatuses"] = apps


def _put_cluster_status(status: dict[str, Any], key: str, cluster: dict[str, Any] | None) -> None:
    sub = status.get(key)
    if not sub or not sub.get("rayClusterName"):
        return
    if cluster is not None and cluster.get("status"):
        sub["rayClusterStatus"] = copy.deepcopy(cluster["status"])
