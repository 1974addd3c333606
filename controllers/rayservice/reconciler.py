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
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from controllers import constants as c
from controllers.api.rayservice import ServeConfigError, parse_serve_config
from controllers.api.validation import validate_rayservice
from controllers.ray import metrics as ray_metrics
from controllers.ray.dashboard import DashboardClientFactory, DashboardError, DashboardHTTPError
from controllers.ray.health import HeadProxyHealthChecker
from controllers.rayservice import heads
from controllers.rayservice.cluster import (
    DELETION_DEADLINE_ANNOTATION_KEY,
    build_ray_cluster,
    cluster_spec_of,
    generate_cluster_name,
    owned_cluster_labels,
)
from controllers.rayservice.hashing import (
    is_zero_downtime_enabled,
    should_prepare_new_cluster,
    should_update_cluster,
)
from controllers.rayservice.kinds import RAYCLUSTERS, RAYSERVICES
from controllers.rayservice.serve import ServeConfigCache, application_statuses, needs_submit
from controllers.rayservice.services import (
    ServeServiceError,
    build_rayservice_head_service,
    build_rayservice_serve_service,
    serve_service_name,
)
from controllers.rayservice.status import (
    calculate_conditions,
    is_condition_true,
    ready_endpoint_pod_uids,
    rfc3339,
    set_condition,
    status_differs,
)
from kuberay_py.client import AlreadyExists, Client, Conflict, NotFound
from kuberay_py.client.resources import ENDPOINTSLICES, PODS, SERVICES
from kuberay_py.clock import Clock, RealClock
from kuberay_py.controller import Request, Result
from kuberay_py.log import get_logger

__all__ = ["COND_SERVE_CONFIG_VALID", "RayServiceOptions", "RayServiceReconciler"]

log = get_logger(__name__)

DEFAULT_DELETION_DELAY = 60.0
MANAGED_BY_KUBERAY = "ray.io/kuberay-operator"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
# kuberay-py only: whether Ray accepted the last serveConfigV2 PUT (a 400 keeps the old apps running).
COND_SERVE_CONFIG_VALID = "ServeConfigValid"


class EventRecorderLike(Protocol):
    def event(
        self, obj: dict[str, Any], type_: Literal["Normal", "Warning"], reason: str, message: str
    ) -> None: ...


@dataclass
class RayServiceOptions:
    serve_poll_interval: float = 2.0  # while Serve applications are deploying
    status_refresh_interval: float | None = 300.0  # slow refresh of application statuses when idle
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))


@dataclass
class _ServeResult:
    ready: bool = False
    apps: dict[str, Any] | None = None  # None: unknown this round (keep the previous statuses)
    in_progress: bool = False


class RayServiceReconciler:
    def __init__(
        self,
        client: Client,
        cache: heads.CacheReader,
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
            requeue.at(self.options.status_refresh_interval)
        return Result(requeue_after=requeue.delay)

    # -- phases ---------------------------------------------------------------------------------
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

    async def _clean_up_dangling_clusters(
        self, svc: dict[str, Any], status: dict[str, Any], requeue: RequeueTimer
    ) -> None:
        """Delete clusters that are neither active nor pending once their deadline passed.

        The deadline is an annotation on the cluster, so it survives an operator restart.
        """
        meta = svc["metadata"]
        keep = set(_cluster_names(status))
        delay = (svc.get("spec") or {}).get("rayClusterDeletionDelaySeconds")
        delay_s = DEFAULT_DELETION_DELAY if delay is None else float(delay)
        now = self.clock.utcnow()
        for cluster in self.cache.list(RAYCLUSTERS, meta["namespace"], labels=owned_cluster_labels(svc)):
            cmeta = cluster["metadata"]
            if cmeta["name"] in keep or cmeta.get("deletionTimestamp"):
                continue
            deadline = _parse_time((cmeta.get("annotations") or {}).get(DELETION_DEADLINE_ANNOTATION_KEY))
            if deadline is None:
                deadline = now + timedelta(seconds=delay_s)
                patch = {"metadata": {"annotations": {DELETION_DEADLINE_ANNOTATION_KEY: rfc3339(deadline)}}}
                try:
                    await self.client.patch(RAYCLUSTERS, cmeta["name"], patch, cmeta["namespace"])
                except NotFound:
                    continue
                log.info(
                    "scheduled dangling RayCluster for deletion",
                    cluster=cmeta["name"],
                    deadline=rfc3339(deadline),
                )
            if now >= deadline:
                await self._delete_cluster(svc, cluster)
            else:
                requeue.at((deadline - now).total_seconds())

    async def _delete_cluster(self, svc: dict[str, Any], cluster: dict[str, Any]) -> None:
        cmeta = cluster["metadata"]
        try:
            await self.client.delete(
                RAYCLUSTERS, cmeta["name"], cmeta["namespace"], propagation_policy="Background"
            )
        except NotFound:
            return
        except Exception as exc:
            self.recorder.event(
                svc,
                c.WARNING,
                c.EVENT_FAILED_TO_DELETE_RAYCLUSTER,
                f"Failed to delete the RayCluster {cmeta['namespace']}/{cmeta['name']}: {exc}",
            )
            raise
        self.recorder.event(
            svc,
            c.NORMAL,
            c.EVENT_DELETED_RAYCLUSTER,
            f"Deleted the RayCluster {cmeta['namespace']}/{cmeta['name']}",
        )

    async def _reconcile_clusters(
        self, svc: dict[str, Any], status: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        ns = svc["metadata"]["namespace"]
        active_name, pending_name = _name(status, "active"), _name(status, "pending")
        active = self.cache.get(RAYCLUSTERS, active_name, ns) if active_name else None
        pending = self.cache.get(RAYCLUSTERS, pending_name, ns) if pending_name else None
        if pending_name and pending is None:
            return active, await self._create_cluster(svc, pending_name)
        goal = cluster_spec_of(svc)
        upgrading = is_condition_true(status.get("conditions"), c.COND_UPGRADE_IN_PROGRESS)
        if should_update_cluster(active, goal, is_active=True, upgrade_in_progress=upgrading):
            assert active is not None
            active = await self._update_cluster(svc, active, "active")
        if should_update_cluster(pending, goal, is_active=False, upgrade_in_progress=upgrading):
            assert pending is not None
            pending = await self._update_cluster(svc, pending, "pending")
        return active, pending

    async def _create_cluster(self, svc: dict[str, Any], name: str) -> dict[str, Any]:
        body = build_ray_cluster(svc, name)
        ns = svc["metadata"]["namespace"]
        try:
            created: dict[str, Any] = await self.client.create(RAYCLUSTERS, body, ns)
        except AlreadyExists:
            existing: dict[str, Any] = await self.client.get(RAYCLUSTERS, name, ns)
            return existing
        except Exception as exc:
            self.recorder.event(
                svc,
                c.WARNING,
                c.EVENT_FAILED_TO_CREATE_RAYCLUSTER,
                f"Failed to create the RayCluster {ns}/{name}: {exc}",
            )
            raise
        self.recorder.event(svc, c.NORMAL, c.EVENT_CREATED_RAYCLUSTER, f"Created the RayCluster {ns}/{name}")
        return created

    async def _update_cluster(
        self, svc: dict[str, Any], cluster: dict[str, Any], role: str
    ) -> dict[str, Any]:
        """KubeRay's modifyRayCluster: the goal spec, labels and annotations; ``suspend`` is kept."""
        goal = build_ray_cluster(svc, cluster["metadata"]["name"])
        body = copy.deepcopy(cluster)
        suspend = (cluster.get("spec") or {}).get("suspend")
        body["spec"] = goal["spec"]
        if suspend is not None:
            body["spec"]["suspend"] = suspend
        body["metadata"]["labels"] = goal["metadata"]["labels"]
        body["metadata"]["annotations"] = goal["metadata"]["annotations"]
        ref = f"{cluster['metadata']['namespace']}/{cluster['metadata']['name']}"
        try:
            updated: dict[str, Any] = await self.client.update(RAYCLUSTERS, body)
        except Exception as exc:
            msg = f"Failed to update the {role} RayCluster {ref}: {exc}"
            self.recorder.event(svc, c.WARNING, c.EVENT_FAILED_TO_UPDATE_RAYCLUSTER, msg)
            raise
        self.recorder.event(svc, c.NORMAL, c.EVENT_UPDATED_RAYCLUSTER, f"Updated the {role} RayCluster {ref}")
        return updated

    async def _sync_head_label(self, svc: dict[str, Any], cluster: dict[str, Any] | None) -> None:
        """``ray.io/serve`` on the head from the checker's latest result; ``false`` when excluded."""
        if cluster is None:
            return
        ns = svc["metadata"]["namespace"]
        pod = heads.head_pod(self.cache, ns, cluster["metadata"]["name"])
        if pod is None:
            return  # a normal state (KubeRay #4686): the Pod watch brings us back
        current = (pod["metadata"].get("labels") or {}).get(c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY)
        if (svc.get("spec") or {}).get("excludeHeadPodFromServeSvc"):
            desired = c.SERVE_LABEL_FALSE
        else:
            target = heads.head_target(pod, f"{ns}/{svc['metadata']['name']}")
            result = self.checker.latest(pod["metadata"]["uid"])
            if target is not None and (result is None or not self.checker.is_fresh(target.pod_uid)):
                self.checker.request(target)  # its result change enqueues us; never wait here
            if target is None:
                desired = c.SERVE_LABEL_FALSE
            elif result is None or result.address != f"{target.ip}:{target.port}":
                return  # no verdict yet for this Pod: keep the label it has
            else:
                desired = c.SERVE_LABEL_TRUE if result.healthy else c.SERVE_LABEL_FALSE
        if current == desired:
            return
        pod_ref = f"{ns}/{pod['metadata']['name']}"
        patch = {"metadata": {"labels": {c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY: desired}}}
        try:
            await self.client.patch(PODS, pod["metadata"]["name"], patch, ns)
        except NotFound:
            return
        except Exception as exc:
            msg = f"Failed to update the serve label to {desired!r} for the Head Pod {pod_ref}: {exc}"
            self.recorder.event(svc, c.WARNING, c.EVENT_FAILED_TO_UPDATE_HEAD_POD_SERVE_LABEL, msg)
            raise
        msg = f"Updated the serve label to {desired!r} for the Head Pod {pod_ref}"
        self.recorder.event(svc, c.NORMAL, c.EVENT_UPDATED_HEAD_POD_SERVE_LABEL, msg)

    async def _reconcile_serve(
        self, svc: dict[str, Any], key: str, status: dict[str, Any], cluster: dict[str, Any]
    ) -> _ServeResult:
        ns = svc["metadata"]["namespace"]
        cluster_name = cluster["metadata"]["name"]
        pod = heads.head_pod(self.cache, ns, cluster_name)
        if pod is None or not heads.is_running_and_ready(pod):
            return _ServeResult()  # the head Pod's status change wakes us up
        ip = (pod.get("status") or {}).get("podIP")
        host = f"[{ip}]" if ip and ":" in ip else ip
        dashboard = self.dashboards.client(f"http://{host}:{heads.dashboard_port(pod, cluster)}")
        try:
            details = await dashboard.get_serve_details()
        except DashboardError as exc:
            log.warning("failed to get Serve application statuses", cluster=cluster_name, error=str(exc))
            return _ServeResult(in_progress=True)
        config_text = (svc.get("spec") or {}).get("serveConfigV2") or ""
        submit, why = needs_submit(self.serve_configs.get(key, cluster_name), config_text, details)
        submitted = False
        rejected = self._rejected.get((key, cluster_name)) == config_text
        if submit and config_text and not rejected:
            submitted = await self._submit(svc, key, status, cluster, dashboard, config_text, why)
            rejected = self._rejected.get((key, cluster_name)) == config_text
        apps = application_statuses(details)
        ready = details.all_running and not submitted
        # A config Ray rejected stays rejected until serveConfigV2 changes: nothing to poll for.
        in_progress = (not details.all_running or submitted) and not rejected
        return _ServeResult(ready=ready, apps=apps, in_progress=in_progress)

    async def _submit(
        self,
        svc: dict[str, Any],
        key: str,
        status: dict[str, Any],
        cluster: dict[str, Any],
        dashboard: Any,
        config_text: str,
        why: str,
    ) -> bool:
        ref = f"{cluster['metadata']['namespace']}/{cluster['metadata']['name']}"
        now = self.clock.utcnow()
        generation = int(svc["metadata"].get("generation") or 0)
        conditions = status.setdefault("conditions", [])
        try:
            await dashboard.put_serve_applications(parse_serve_config(config_text))
        except (DashboardError, ServeConfigError) as exc:
            message = f"Failed to update serve applications to the RayCluster {ref}: {exc}"
            self._warn(svc, key, c.EVENT_FAILED_TO_UPDATE_SERVE_APPLICATIONS, message)
            if isinstance(exc, DashboardHTTPError) and 400 <= exc.status < 500:
                # Ray rejected the config itself; the running applications are untouched.
                self._rejected[(key, cluster["metadata"]["name"])] = config_text
                set_condition(
                    conditions,
                    COND_SERVE_CONFIG_VALID,
                    "False",
                    "ServeConfigRejected",
                    exc.body.strip()[:1000],
                    observed_generation=generation,
                    now=now,
                )
            return False
        log.info("submitted serve config", cluster=ref, reason=why)
        self.serve_configs.put(key, cluster["metadata"]["name"], config_text)
        self._rejected.pop((key, cluster["metadata"]["name"]), None)
        self._warned.pop((key, c.EVENT_FAILED_TO_UPDATE_SERVE_APPLICATIONS), None)
        set_condition(
            conditions,
            COND_SERVE_CONFIG_VALID,
            "True",
            "ServeConfigAccepted",
            f"Ray accepted serveConfigV2 on the RayCluster {ref}",
            observed_generation=generation,
            now=now,
        )
        self.recorder.event(
            svc,
            c.NORMAL,
            c.EVENT_UPDATED_SERVE_APPLICATIONS,
            f"Updated serve applications to the RayCluster {ref}",
        )
        return True

    def _ready_serve_pods(self, cluster: dict[str, Any]) -> int:
        """Pods of a cluster the serve Service would select and route to: serve=true and Ready."""
        pods = self.cache.list(
            PODS,
            cluster["metadata"]["namespace"],
            labels={
                c.RAY_CLUSTER_LABEL_KEY: cluster["metadata"]["name"],
                c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY: c.SERVE_LABEL_TRUE,
            },
        )
        return sum(1 for p in pods if heads.is_running_and_ready(p))

    async def _reconcile_services(self, svc: dict[str, Any], target: dict[str, Any]) -> dict[str, Any] | None:
        head = build_rayservice_head_service(svc, target)
        try:
            serve = build_rayservice_serve_service(svc, target)
        except ServeServiceError as exc:
            self._warn(
                svc,
                f"{svc['metadata']['namespace']}/{svc['metadata']['name']}",
                "FailedToCreateService",
                str(exc),
            )
            await self._apply_service(svc, head)
            return None
        await self._apply_service(svc, head)
        return await self._apply_service(svc, serve)

    async def _apply_service(self, svc: dict[str, Any], desired: dict[str, Any]) -> dict[str, Any]:
        """Create, or re-point when the ``ray.io/cluster`` selector changes (KubeRay's rule)."""
        ns, name = desired["metadata"]["namespace"], desired["metadata"]["name"]
        existing = self.cache.get(SERVICES, name, ns)
        if existing is None:
            try:
                created: dict[str, Any] = await self.client.create(SERVICES, desired, ns)
            except AlreadyExists:
                existing = await self.client.get(SERVICES, name, ns)
            except Exception as exc:
                msg = f"Failed to create the service {ns}/{name}, {exc}"
                self.recorder.event(svc, c.WARNING, c.EVENT_FAILED_TO_CREATE_SERVICE, msg)
                raise
            else:
                self.recorder.event(
                    svc, c.NORMAL, c.EVENT_CREATED_SERVICE, f"Created the service {ns}/{name}"
                )
                return created
        old_sel = (existing.get("spec") or {}).get("selector") or {}
        if old_sel.get(c.RAY_CLUSTER_LABEL_KEY) == desired["spec"]["selector"].get(c.RAY_CLUSTER_LABEL_KEY):
            return existing
        body = copy.deepcopy(existing)
        new_spec = copy.deepcopy(desired["spec"])
        for immutable in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
            if immutable in (existing.get("spec") or {}):
                new_spec[immutable] = existing["spec"][immutable]
        body["spec"] = new_spec
        try:
            updated: dict[str, Any] = await self.client.update(SERVICES, body)
        except Exception as exc:
            msg = f"Failed to update the service {ns}/{name}, {exc}"
            self.recorder.event(svc, c.WARNING, c.EVENT_FAILED_TO_UPDATE_SERVICE, msg)
            raise
        self.recorder.event(svc, c.NORMAL, c.EVENT_UPDATED_SERVICE, f"Updated the service {ns}/{name}")
        return updated

    def _count_endpoints(self, svc: dict[str, Any], status: dict[str, Any]) -> None:
        """``numServeEndpoints`` = unique ready Pod UIDs in the serve Service's EndpointSlices."""
        ns, name = svc["metadata"]["namespace"], svc["metadata"]["name"]
        slices = self.cache.list(ENDPOINTSLICES, ns, labels={SERVICE_NAME_LABEL: serve_service_name(svc)})
        ready = ready_endpoint_pod_uids(slices)
        status["numServeEndpoints"] = len(ready)
        by_source = {"head": 0, "worker": 0}
        for pod_name in ready.values():
            pod = self.cache.get(PODS, pod_name, ns) if pod_name else None
            node_type = ((pod or {}).get("metadata", {}).get("labels") or {}).get(c.RAY_NODE_TYPE_LABEL_KEY)
            by_source["head" if node_type == c.NODE_TYPE_HEAD else "worker"] += 1
        for source, count in by_source.items():
            ray_metrics.SERVE_ENDPOINTS.labels(namespace=ns, name=name, source=source).set(count)

    async def _write_status(self, svc: dict[str, Any], key: str, status: dict[str, Any]) -> dict[str, Any]:
        if not status_differs(svc.get("status"), status):
            return svc
        status["lastUpdateTime"] = rfc3339(self.clock.utcnow())
        body = copy.deepcopy(svc)
        body["status"] = status
        updated: dict[str, Any] = await self.client.update_status(RAYSERVICES, body)
        self._written[key] = (str(updated["metadata"].get("resourceVersion")), copy.deepcopy(status))
        return updated

    def _warn(self, svc: dict[str, Any], key: str, reason: str, message: str) -> None:
        """A Warning event, once per distinct message (never one per reconcile)."""
        if self._warned.get((key, reason)) == message:
            return
        self._warned[(key, reason)] = message
        self.recorder.event(svc, c.WARNING, reason, message)


class RequeueTimer:
    """The earliest of the delays the phases asked for (None: rely on watches)."""

    def __init__(self) -> None:
        self.delay: float | None = None

    def at(self, seconds: float) -> None:
        seconds = max(0.001, seconds)
        self.delay = seconds if self.delay is None else min(self.delay, seconds)


def _name(status: dict[str, Any], which: str) -> str:
    return str((status.get(f"{which}ServiceStatus") or {}).get("rayClusterName") or "")


def _cluster_names(status: dict[str, Any]) -> list[str]:
    return [n for n in (_name(status, "active"), _name(status, "pending")) if n]


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


def _parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
