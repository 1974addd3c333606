"""Phase: where traffic goes -- the head and serve Services, promotion, and the endpoint count.

Promotion rule: the pending cluster takes over once all its Serve applications are RUNNING *and*
the serve Service would route to at least one ready Pod of it; the Services are then re-pointed
(KubeRay's rule: only the ``ray.io/cluster`` selector moves them), and the status swaps pending
into active in the same write.
"""

from __future__ import annotations

import copy

from controllers import constants as c
from controllers.common.events import create_once, write_with_events
from controllers.common.objects import labels_of
from controllers.common.pods import is_running_and_ready
from controllers.ray import metrics as ray_metrics
from controllers.rayservice.context import ServiceContext
from controllers.rayservice.options import SERVICE_NAME_LABEL
from controllers.rayservice.services import (
    ServeServiceError,
    build_rayservice_head_service,
    build_rayservice_serve_service,
    serve_service_name,
)
from controllers.rayservice.serving import ServeResult
from controllers.rayservice.shapes import cluster_name
from controllers.rayservice.status import ready_endpoint_pod_uids
from kuberay_py.client.resources import ENDPOINTSLICES, PODS, SERVICES
from kuberay_py.log import get_logger
from kuberay_py.objects import Obj

__all__ = ["apply_service", "count_endpoints", "promotion_target", "ready_serve_pods", "route_traffic"]

log = get_logger(__name__)

# Kept from the existing Service when it is re-pointed (the API server owns them).
_SERVICE_FIELDS_KEPT = ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "healthCheckNodePort")


def promotion_target(
    ctx: ServiceContext,
    active: Obj | None,
    pending: Obj | None,
    active_serve: ServeResult,
    pending_serve: ServeResult,
) -> Obj | None:
    """The cluster the Services should point to this round, or None to leave them alone."""
    if pending is not None and pending_serve.ready and ready_serve_pods(ctx, pending) > 0:
        return pending
    if active is not None and active_serve.ready:
        return active
    return None


async def route_traffic(ctx: ServiceContext, target: Obj) -> bool:
    """Point the Services at ``target``; True when that promoted the pending cluster."""
    serve_svc = await _reconcile_services(ctx, target)
    points_to = ((serve_svc or {}).get("spec") or {}).get("selector", {}).get(c.RAY_CLUSTER_LABEL_KEY)
    pending_name = cluster_name(ctx.status, "pending")
    if not pending_name or points_to != pending_name:
        return False
    log.info("promoting pending cluster", old=cluster_name(ctx.status, "active"), new=pending_name)
    ctx.status["activeServiceStatus"] = ctx.status.get("pendingServiceStatus") or {}
    ctx.status["pendingServiceStatus"] = {}
    return True


async def apply_service(ctx: ServiceContext, desired: Obj) -> Obj:
    """Create ``desired``, or re-point it when its ``ray.io/cluster`` selector changed (KubeRay's rule).

    The incremental upgrade applies its head Service and per-cluster serve Services with it.
    """
    return await _apply_service(ctx, desired)


def ready_serve_pods(ctx: ServiceContext, cluster: Obj) -> int:
    """Pods of a cluster the serve Service would select and route to: serve=true and Ready."""
    pods = ctx.deps.cache.list(
        PODS,
        cluster["metadata"]["namespace"],
        labels={
            c.RAY_CLUSTER_LABEL_KEY: cluster["metadata"]["name"],
            c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY: c.SERVE_LABEL_TRUE,
        },
    )
    return sum(1 for p in pods if is_running_and_ready(p))


def count_endpoints(ctx: ServiceContext, services: list[str] | None = None) -> None:
    """``numServeEndpoints`` = unique ready Pod UIDs in the serve Service's EndpointSlices.

    ``services``: the Services to count instead (an incremental upgrade counts both clusters'
    per-cluster serve Services, as KubeRay does).
    """
    ns, name = ctx.ref.namespace, ctx.ref.name
    ready: dict[str, str] = {}
    for service in services if services is not None else [serve_service_name(ctx.svc)]:
        ready.update(
            ready_endpoint_pod_uids(
                ctx.deps.cache.list(ENDPOINTSLICES, ns, labels={SERVICE_NAME_LABEL: service})
            )
        )
    ctx.status["numServeEndpoints"] = len(ready)
    by_source = {"head": 0, "worker": 0}
    for pod_name in ready.values():
        pod = ctx.deps.cache.get(PODS, pod_name, ns) if pod_name else None
        node_type = labels_of(pod or {}).get(c.RAY_NODE_TYPE_LABEL_KEY)
        by_source["head" if node_type == c.NODE_TYPE_HEAD else "worker"] += 1
    for source, count in by_source.items():
        ray_metrics.SERVE_ENDPOINTS.labels(namespace=ns, name=name, source=source).set(count)


async def _reconcile_services(ctx: ServiceContext, target: Obj) -> Obj | None:
    head = build_rayservice_head_service(ctx.svc, target)
    try:
        serve = build_rayservice_serve_service(ctx.svc, target)
    except ServeServiceError as exc:
        ctx.warn("FailedToCreateService", str(exc))
        await _apply_service(ctx, head)
        return None
    await _apply_service(ctx, head)
    return await _apply_service(ctx, serve)


async def _apply_service(ctx: ServiceContext, desired: Obj) -> Obj:
    """Create, or re-point when the ``ray.io/cluster`` selector changes (KubeRay's rule)."""
    ns, name = desired["metadata"]["namespace"], desired["metadata"]["name"]
    existing = ctx.deps.cache.get(SERVICES, name, ns)
    if existing is None:
        created: Obj | None = await create_once(
            ctx.deps.recorder,
            ctx.svc,
            ctx.deps.client.create(SERVICES, desired, ns),
            failed=(c.EVENT_FAILED_TO_CREATE_SERVICE, f"Failed to create the service {ns}/{name}, {{error}}"),
            done=(c.EVENT_CREATED_SERVICE, f"Created the service {ns}/{name}"),
        )
        if created is not None:
            return created
        existing = await ctx.deps.client.get(SERVICES, name, ns)
    old_sel = (existing.get("spec") or {}).get("selector") or {}
    if old_sel.get(c.RAY_CLUSTER_LABEL_KEY) == desired["spec"]["selector"].get(c.RAY_CLUSTER_LABEL_KEY):
        return existing
    body = copy.deepcopy(existing)
    new_spec = copy.deepcopy(desired["spec"])
    old_spec = existing.get("spec") or {}
    for kept in _SERVICE_FIELDS_KEPT:
        if kept in old_spec:
            new_spec[kept] = old_spec[kept]
    # Re-pointing must not move a LoadBalancer/NodePort Service to new node ports.
    node_ports = {p.get("name"): p["nodePort"] for p in old_spec.get("ports") or [] if p.get("nodePort")}
    for port in new_spec.get("ports") or []:
        if port.get("name") in node_ports and new_spec.get("type") in ("NodePort", "LoadBalancer"):
            port.setdefault("nodePort", node_ports[port["name"]])
    body["spec"] = new_spec
    updated: Obj = await write_with_events(
        ctx.deps.recorder,
        ctx.svc,
        ctx.deps.client.update(SERVICES, body),
        failed=(c.EVENT_FAILED_TO_UPDATE_SERVICE, f"Failed to update the service {ns}/{name}, {{error}}"),
        done=(c.EVENT_UPDATED_SERVICE, f"Updated the service {ns}/{name}"),
    )
    return updated
