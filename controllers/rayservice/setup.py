"""Wiring the RayService controller and the head-proxy health checker into a manager.

Watches (besides ``for_(RayService)`` and ``owns`` RayCluster / Service):

* EndpointSlices, mapped through ``kubernetes.io/service-name`` to the RayService owning that
  Service, so ``numServeEndpoints`` and ``Ready`` follow the serve Service's endpoints;
* Pods of RayService clusters (head and workers), mapped through ``ray.io/cluster`` to the owning
  RayService, so a head becoming Ready (submit the config) or a pending cluster's workers becoming
  Ready (promotion needs ready endpoints) wakes it without polling;
* for ``NewClusterWithIncrementalUpgrade``, once discovery finds the Gateway API: Gateways and
  HTTPRoutes (status included) through their owner reference, and the per-cluster serve
  Services' EndpointSlices through the owning RayCluster.

The checker is a leader-only runnable: only the leader probes head proxies, and a result change
enqueues the owning RayService.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from controllers import constants as c
from controllers.common.dashboards import close_with_manager
from controllers.common.predicates import spec_labels_annotations_or_deletion
from controllers.common.scope import deps_from
from controllers.constants import RAYCLUSTERS, RAYSERVICES
from controllers.ray.dashboard import DashboardClientFactory
from controllers.ray.health import (
    DEFAULT_CHECK_CONCURRENCY,
    DEFAULT_CHECK_PERIOD,
    HeadProxyHealthChecker,
    HeadTarget,
    HealthResult,
)
from controllers.rayservice import heads
from controllers.rayservice.gateway_api import GatewayAPI
from controllers.rayservice.options import SERVICE_NAME_LABEL, RayServiceOptions
from controllers.rayservice.reconciler import RayServiceReconciler
from kuberay_py.client.resources import ENDPOINTSLICES, GATEWAYS, HTTPROUTES, PODS, SERVICES
from kuberay_py.controller import (
    Controller,
    Request,
)

if TYPE_CHECKING:
    from kuberay_py.manager.manager import Manager

__all__ = ["CONTROLLER_NAME", "EVENT_SOURCE", "RayServiceController", "setup"]

# The controller's name (metrics' `controller` label, logs) and its Events' source component:
# the two differ, as in KubeRay, and dashboards and alerts key on both.
CONTROLLER_NAME = "rayservice"
EVENT_SOURCE = "rayservice-controller"


@dataclass
class RayServiceController:
    reconciler: RayServiceReconciler
    controller: Controller
    checker: HeadProxyHealthChecker
    dashboards: DashboardClientFactory


def setup(
    manager: Manager,
    *,
    dashboard_factory: DashboardClientFactory | None = None,
    checker: HeadProxyHealthChecker | None = None,
    options: RayServiceOptions | None = None,
    max_concurrent_reconciles: int = 4,
    head_check_concurrency: int = DEFAULT_CHECK_CONCURRENCY,
    head_check_period: float = DEFAULT_CHECK_PERIOD,
) -> RayServiceController:
    cache = manager.cache
    dashboards = dashboard_factory or DashboardClientFactory()
    checker = checker or HeadProxyHealthChecker(
        max_concurrency=head_check_concurrency,
        period=head_check_period,
        clock=manager.clock,
        kubernetes_proxy=dashboards.kubernetes_proxy,  # --use-kubernetes-proxy covers both clients
    )
    holder: list[Controller] = []

    def owner_rayservice(obj: Mapping[str, Any]) -> list[Request]:
        meta = obj.get("metadata") or {}
        for ref in meta.get("ownerReferences") or []:
            if ref.get("controller") and ref.get("kind") == "RayService":
                return [Request(meta["namespace"], ref["name"])]
        return []

    def start_gateway_watches() -> asyncio.Future[None]:
        """Gateways and HTTPRoutes join the cache once discovery found them (gateway_api.py)."""
        gateways, routes = cache.informer_for(GATEWAYS), cache.informer_for(HTTPROUTES)
        holder[0].watch(gateways, owner_rayservice, source=GATEWAYS.kind)
        holder[0].watch(routes, owner_rayservice, source=HTTPROUTES.kind)

        async def synced() -> None:
            await gateways.wait_for_sync()
            await routes.wait_for_sync()

        return asyncio.ensure_future(synced())

    reconciler = RayServiceReconciler(
        deps_from(manager, EVENT_SOURCE, options or RayServiceOptions()),
        dashboards,
        checker,
        gateway_api=GatewayAPI(manager.client, start_gateway_watches),
    )

    def pod_to_rayservice(pod: Mapping[str, Any]) -> list[Request]:
        meta = pod.get("metadata") or {}
        cluster = (meta.get("labels") or {}).get(c.RAY_CLUSTER_LABEL_KEY)
        if not cluster:
            return []
        owner = heads.owning_rayservice(cache, meta["namespace"], cluster)
        return [Request(meta["namespace"], owner)] if owner else []

    def slice_to_rayservice(endpoint_slice: Mapping[str, Any]) -> list[Request]:
        meta = endpoint_slice.get("metadata") or {}
        service_name = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
        if not service_name:
            return []
        service = cache.get(SERVICES, service_name, meta["namespace"])
        for ref in ((service or {}).get("metadata") or {}).get("ownerReferences") or []:
            if ref.get("controller") and ref.get("kind") == "RayService":
                return [Request(meta["namespace"], ref["name"])]
            if ref.get("controller") and ref.get("kind") == "RayCluster":
                # an incremental upgrade's per-cluster serve Service, owned by its RayCluster
                owner = heads.owning_rayservice(cache, meta["namespace"], ref["name"])
                return [Request(meta["namespace"], owner)] if owner else []
        return []

    primary = spec_labels_annotations_or_deletion()
    controller = (
        manager.controller(CONTROLLER_NAME)
        .for_(RAYSERVICES, predicates=[primary])
        .owns(RAYCLUSTERS)
        .owns(SERVICES)
        .watches(ENDPOINTSLICES, slice_to_rayservice)
        .watches(PODS, pod_to_rayservice)
        .with_options(max_concurrent_reconciles=max_concurrent_reconciles)
        .complete(reconciler)
    )
    holder.append(controller)

    def on_change(target: HeadTarget, result: HealthResult) -> None:
        namespace, name = target.owner.split("/", 1)
        controller.enqueue(Request(namespace, name))

    checker.set_targets(lambda: heads.head_targets(cache))
    checker.on_change = on_change

    manager.add_runnable(checker.run, needs_leader_election=True, name="head-proxy-health-checker")
    close_with_manager(manager, dashboards, "rayservice-dashboards")
    return RayServiceController(reconciler, controller, checker, dashboards)
