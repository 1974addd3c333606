"""Phases that make a cluster serve: the head's serve label, Serve config, Services, endpoints."""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass
from typing import Any

from controllers import constants as c
from controllers.api.rayservice import ServeConfigError, parse_serve_config
from controllers.common.pods import is_running_and_ready
from controllers.ray import metrics as ray_metrics
from controllers.ray.dashboard import DashboardClosed, DashboardError, DashboardHTTPError
from controllers.rayservice import heads
from controllers.rayservice.phase_base import (
    COND_SERVE_CONFIG_VALID,
    SERVICE_NAME_LABEL,
    PhaseBase,
    log,
)
from controllers.rayservice.serve import application_statuses, needs_submit
from controllers.rayservice.services import (
    ServeServiceError,
    build_rayservice_head_service,
    build_rayservice_serve_service,
    serve_service_name,
)
from controllers.rayservice.status import (
    ready_endpoint_pod_uids,
    set_condition,
)
from kuberay_py.client import AlreadyExists, NotFound
from kuberay_py.client.resources import ENDPOINTSLICES, PODS, SECRETS, SERVICES

__all__ = ["ServingPhases"]


@dataclass
class _ServeResult:
    ready: bool = False
    apps: dict[str, Any] | None = None  # None: unknown this round (keep the previous statuses)
    in_progress: bool = False


class ServingPhases(PhaseBase):
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
        if pod is None or not is_running_and_ready(pod):
            return _ServeResult()  # the head Pod's status change wakes us up
        ip = (pod.get("status") or {}).get("podIP")
        host = f"[{ip}]" if ip and ":" in ip else ip
        try:
            token = await self._auth_token(pod)
        except (NotFound, ValueError) as exc:
            self._warn(
                svc,
                key,
                "FailedToGetRayAuthToken",
                f"Cannot read the Ray auth token of {cluster_name}: {exc}",
            )
            return _ServeResult()  # the Secret's creation does not wake us; the slow refresh will
        try:
            dashboard = self.dashboards.client(
                f"http://{host}:{heads.dashboard_port(pod, cluster)}", auth_token=token
            )
            details = await dashboard.get_serve_details()
        except DashboardClosed:
            log.info("dashboard clients closed (shutting down); serve status left for the next leader",
                     cluster=cluster_name)
            return _ServeResult(in_progress=True)
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
        except DashboardClosed:
            return False  # shutting down: not Ray's failure, so no Warning; the next leader submits
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

    async def _auth_token(self, pod: dict[str, Any]) -> str | None:
        """The head's Ray auth token (literal env or Secret), read once per head Pod."""
        source = heads.auth_token_source(pod)
        if source is None:
            return None
        kind, value, key = source
        if kind == "value":
            return value
        uid = pod["metadata"]["uid"]
        cached = self._tokens.get(uid)
        if cached is not None:
            return cached
        secret = await self.client.get(SECRETS, value, pod["metadata"]["namespace"])
        encoded = (secret.get("data") or {}).get(key)
        if encoded is None:
            raise ValueError(f"Secret {value} has no key {key!r}")
        token = base64.b64decode(encoded).decode().strip()
        if len(self._tokens) > 10000:
            self._tokens.clear()
        self._tokens[uid] = token
        return token

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
        return sum(1 for p in pods if is_running_and_ready(p))

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
        old_spec = existing.get("spec") or {}
        for kept in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "healthCheckNodePort"):
            if kept in old_spec:
                new_spec[kept] = old_spec[kept]
        # Re-pointing must not move a LoadBalancer/NodePort Service to new node ports.
        node_ports = {p.get("name"): p["nodePort"] for p in old_spec.get("ports") or [] if p.get("nodePort")}
        for port in new_spec.get("ports") or []:
            if port.get("name") in node_ports and new_spec.get("type") in ("NodePort", "LoadBalancer"):
                port.setdefault("nodePort", node_ports[port["name"]])
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
