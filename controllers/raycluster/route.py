"""The head's OpenShift Route, made instead of the Ingress on OpenShift (KubeRay v1.7.0).

KubeRay asks discovery once whether the API server serves one of OpenShift's groups
(``route.openshift.io``, ``security.openshift.io``, ``config.openshift.io``); there, unless the
operator's ``USE_INGRESS_ON_OPENSHIFT`` is ``true``, a RayCluster with
``headGroupSpec.enableIngress`` gets a ``route.openshift.io/v1`` Route ``<name>-head-route`` to
the head Service's dashboard port instead of an Ingress. It is created once (when no Route
labelled with the cluster exists) and never updated, as in KubeRay. We ask discovery on the
first such reconcile rather than at start (the answer is the same and every other cluster costs
nothing); a failed discovery fails that reconcile and is asked again on the next one.
"""

from __future__ import annotations

import asyncio
from typing import Any

from controllers import constants as C
from controllers.common import cluster as common
from controllers.raycluster.services import service_ports
from kuberay_py.client import Client, Resource
from kuberay_py.log import get_logger
from kuberay_py.objects import Obj

__all__ = [
    "OPENSHIFT_MARKERS",
    "ROUTES",
    "USE_INGRESS_ON_OPENSHIFT",
    "OpenShift",
    "build_route",
    "route_name",
]

log = get_logger(__name__)

ROUTES = Resource("route.openshift.io", "v1", "Route", "routes")
#: Any one of these groups served means OpenShift (KubeRay's openShiftAPIGroups); each is asked
#: for through a kind every OpenShift serves in it.
OPENSHIFT_MARKERS = (
    ROUTES,
    Resource(
        "security.openshift.io", "v1", "SecurityContextConstraints", "securitycontextconstraints", False
    ),
    Resource("config.openshift.io", "v1", "ClusterVersion", "clusterversions", False),
)
USE_INGRESS_ON_OPENSHIFT = "USE_INGRESS_ON_OPENSHIFT"


class OpenShift:
    """``await routes_instead_of_ingress()``: OpenShift discovered once, and no opt-out set."""

    def __init__(self, client: Client, *, use_ingress: bool = False) -> None:
        self._client = client
        self._use_ingress = use_ingress
        self._found: bool | None = None
        self._lock = asyncio.Lock()

    async def routes_instead_of_ingress(self) -> bool:
        if self._use_ingress:
            return False
        if self._found is None:
            async with self._lock:
                if self._found is None:
                    found = False
                    for marker in OPENSHIFT_MARKERS:  # one discovery GET per group, until one answers
                        if await self._client.served(marker):
                            found = True
                            break
                    self._found = found
                    log.info("cluster type detected", openshift=self._found)
        return self._found


def route_name(cluster: Obj) -> str:
    """``<name>-head-route``, cut so OpenShift's ``<route>-<namespace>`` host label stays ≤ 63."""
    name = f"{cluster['metadata']['name']}-{C.NODE_TYPE_HEAD}-route"
    limit = 51 - len(cluster["metadata"]["namespace"])
    if len(name) > limit:
        name = name[: max(limit, 0)]
    return common.check_name(name)


def build_route(cluster: Obj) -> Obj:
    meta = cluster["metadata"]
    port = service_ports(cluster).get(C.DASHBOARD_PORT_NAME, C.DEFAULT_DASHBOARD_PORT)
    metadata: dict[str, Any] = {
        "name": route_name(cluster),
        "namespace": meta["namespace"],
        "labels": {
            C.RAY_CLUSTER_LABEL_KEY: meta["name"],
            C.RAY_ID_LABEL_KEY: common.check_label(f"{meta['name']}-{C.NODE_TYPE_HEAD}"),
            C.KUBERNETES_APPLICATION_NAME_LABEL_KEY: C.APPLICATION_NAME,
            C.KUBERNETES_CREATED_BY_LABEL_KEY: C.COMPONENT_NAME,
        },
        "ownerReferences": [common.controller_ref(cluster)],
    }
    if meta.get("annotations"):
        metadata["annotations"] = dict(meta["annotations"])
    return {
        "apiVersion": ROUTES.api_version,
        "kind": ROUTES.kind,
        "metadata": metadata,
        "spec": {
            "to": {"kind": "Service", "name": common.head_service_name(cluster), "weight": 100},
            "port": {"targetPort": port},
            "wildcardPolicy": "None",
        },
    }
