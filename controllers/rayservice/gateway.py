"""The Gateway API objects of an incremental upgrade (pure builders and readers).

KubeRay's shapes (docs/reference/incremental-upgrade.md §2): one Gateway ``<svc>-gateway`` with a single HTTP
listener on port 80; one HTTPRoute ``<svc>-httproute`` with one ``PathPrefix /`` rule whose
backends are the per-cluster serve Services ``<cluster>-serve-svc`` with the traffic weights; and
those per-cluster Services, owned by their RayCluster so they go with it.

The drift checks compare only the fields the operator sets, so the defaults the API server adds
(``allowedRoutes``, parentRef ``group``/``kind``, backend ``group``/``kind``/``weight``) never look
like a change. Readiness follows the Gateway API status contract: a Gateway is ready when
``Accepted`` and ``Programmed`` are True; a route when the parent entry for our Gateway has
``Accepted`` and ``ResolvedRefs`` True.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from controllers import constants as c
from controllers.common import cluster as common
from controllers.common.objects import new_child
from controllers.rayservice.cluster import cluster_spec_of
from controllers.rayservice.services import ServeServiceError, serve_ports
from kuberay_py.client.resources import SERVICES

__all__ = [
    "GATEWAY_API_VERSION",
    "LISTENER_NAME",
    "LISTENER_PORT",
    "Weights",
    "backend_port",
    "build_cluster_serve_service",
    "build_gateway",
    "build_httproute",
    "cluster_serve_service_name",
    "gateway_differs",
    "gateway_name",
    "gateway_ready",
    "httproute_differs",
    "httproute_name",
    "httproute_ready",
    "route_weights",
]

GATEWAY_API_VERSION = "gateway.networking.k8s.io/v1"
LISTENER_NAME = "http"
LISTENER_PORT = 80
_LISTENER = {"name": LISTENER_NAME, "protocol": "HTTP", "port": LISTENER_PORT}

Weights = tuple[int, int | None]  # (active, pending); pending None: no pending backend


def gateway_name(rayservice: dict[str, Any]) -> str:
    return f"{rayservice['metadata']['name']}-gateway"


def httproute_name(rayservice: dict[str, Any]) -> str:
    return f"{rayservice['metadata']['name']}-httproute"


def cluster_serve_service_name(cluster_name: str) -> str:
    return common.serve_service_name(cluster_name)


def _owner(rayservice: dict[str, Any]) -> dict[str, Any]:
    return common.controller_ref({**rayservice, "apiVersion": "ray.io/v1", "kind": "RayService"})


def build_gateway(rayservice: dict[str, Any], gateway_class: str) -> dict[str, Any]:
    meta = rayservice["metadata"]
    return {
        "apiVersion": GATEWAY_API_VERSION,
        "kind": "Gateway",
        "metadata": {
            "name": gateway_name(rayservice),
            "namespace": meta["namespace"],
            "ownerReferences": [_owner(rayservice)],
        },
        "spec": {"gatewayClassName": gateway_class, "listeners": [dict(_LISTENER)]},
    }


def gateway_differs(current: dict[str, Any], desired: dict[str, Any]) -> bool:
    """KubeRay's IsGatewayEqual negated: class, listener count, each listener's name/protocol/port."""
    have, want = current.get("spec") or {}, desired["spec"]
    if have.get("gatewayClassName") != want["gatewayClassName"]:
        return True
    have_l, want_l = have.get("listeners") or [], want["listeners"]
    if len(have_l) != len(want_l):
        return True
    keys = ("name", "protocol", "port")
    return any(any(h.get(k) != w.get(k) for k in keys) for h, w in zip(have_l, want_l, strict=True))


def backend_port(cluster: dict[str, Any]) -> int:
    """The head container's port named exactly ``serve`` (KubeRay's GetServePort), else 8000."""
    template = ((common.spec_of(cluster).get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}
    containers = template.get("containers") or [{}]
    for port in containers[c.RAY_CONTAINER_INDEX].get("ports") or []:
        if port.get("name") == c.SERVING_PORT_NAME:
            return int(port["containerPort"])
    return c.DEFAULT_SERVING_PORT


def _backend(namespace: str, cluster: dict[str, Any], weight: int) -> dict[str, Any]:
    return {
        "name": cluster_serve_service_name(cluster["metadata"]["name"]),
        "namespace": namespace,
        "port": backend_port(cluster),
        "weight": weight,
    }


def build_httproute(
    rayservice: dict[str, Any],
    active: dict[str, Any],
    pending: dict[str, Any] | None,
    weights: Weights,
) -> dict[str, Any]:
    """One rule, ``PathPrefix /``; the active backend first, the pending one while it exists."""
    namespace = rayservice["metadata"]["namespace"]
    active_weight, pending_weight = weights
    backends = [_backend(namespace, active, active_weight)]
    if pending is not None:
        backends.append(_backend(namespace, pending, pending_weight or 0))
    return {
        "apiVersion": GATEWAY_API_VERSION,
        "kind": "HTTPRoute",
        "metadata": {
            "name": httproute_name(rayservice),
            "namespace": namespace,
            "ownerReferences": [_owner(rayservice)],
        },
        "spec": {
            "parentRefs": [{"name": gateway_name(rayservice), "namespace": namespace}],
            "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "backendRefs": backends}],
        },
    }


def httproute_differs(current: dict[str, Any], desired: dict[str, Any]) -> bool:
    """KubeRay's IsHTTPRouteEqual negated: hostnames, parents, rules, matches, filters, backends."""
    have, want = current.get("spec") or {}, desired["spec"]
    if (have.get("hostnames") or []) != (want.get("hostnames") or []):
        return True
    have_p, want_p = have.get("parentRefs") or [], want["parentRefs"]
    if len(have_p) != len(want_p) or any(
        h.get("name") != w.get("name") or (h.get("namespace") or "") != (w.get("namespace") or "")
        for h, w in zip(have_p, want_p, strict=True)
    ):
        return True
    have_r, want_r = have.get("rules") or [], want["rules"]
    if len(have_r) != len(want_r):
        return True
    for h, w in zip(have_r, want_r, strict=True):
        if (h.get("matches") or []) != w.get("matches"):
            return True
        if (h.get("filters") or []) != (w.get("filters") or []):
            return True
        hb, wb = h.get("backendRefs") or [], w.get("backendRefs") or []
        if len(hb) != len(wb):
            return True
        for x, y in zip(hb, wb, strict=True):
            if _backend_key(x) != _backend_key(y):
                return True
    return False


def _backend_key(backend: dict[str, Any]) -> tuple[Any, ...]:
    """What KubeRay compares per backend: a nil namespace is "", a nil weight 1, a nil port 0."""
    weight = backend.get("weight")
    return (
        backend.get("name"),
        backend.get("namespace") or "",
        1 if weight is None else weight,
        backend.get("port") or 0,
    )


def _true(conditions: Iterable[dict[str, Any]] | None, kind: str) -> bool:
    return any(cond.get("type") == kind and cond.get("status") == "True" for cond in conditions or [])


def gateway_ready(gateway: dict[str, Any] | None) -> bool:
    """KubeRay's IsGatewayReady: ``Accepted`` and ``Programmed`` True."""
    conditions = ((gateway or {}).get("status") or {}).get("conditions")
    return gateway is not None and _true(conditions, "Accepted") and _true(conditions, "Programmed")


def httproute_ready(route: dict[str, Any] | None, gateway: dict[str, Any]) -> bool:
    """KubeRay's IsHTTPRouteReady: our Gateway's parent entry has ``Accepted`` and ``ResolvedRefs``."""
    if route is None:
        return False
    gw_meta = gateway["metadata"]
    for parent in (route.get("status") or {}).get("parents") or []:
        ref = parent.get("parentRef") or {}
        if ref.get("name") != gw_meta["name"]:
            continue
        if ref.get("namespace") not in (None, "", gw_meta["namespace"]):
            continue
        conditions = parent.get("conditions")
        if _true(conditions, "Accepted") and _true(conditions, "ResolvedRefs"):
            return True
    return False


def route_weights(route: dict[str, Any] | None, active: str, pending: str) -> tuple[int, int]:
    """The weights of the two clusters' backends, -1 where absent (KubeRay's GetWeightsFromHTTPRoute).

    A backend belongs to a cluster when it is that cluster's per-cluster serve Service (an exact
    match, where KubeRay matches a substring; generated names make both the same).
    """
    rules = ((route or {}).get("spec") or {}).get("rules") or []
    if not rules:
        return -1, -1
    found = {active: -1, pending: -1}
    for backend in rules[0].get("backendRefs") or []:
        for cluster in (active, pending):
            if cluster and backend.get("name") == cluster_serve_service_name(cluster):
                found[cluster] = int(backend.get("weight") or 0)
    return (found[active] if active else -1), (found[pending] if pending else -1)


def build_cluster_serve_service(rayservice: dict[str, Any], cluster: dict[str, Any]) -> dict[str, Any]:
    """``<cluster>-serve-svc``: the serve ports of the cluster's head, owned by the RayCluster.

    KubeRay ignores a user ``spec.serveService`` in this mode, and so do we.
    """
    name = cluster["metadata"]["name"]
    ports = serve_ports(cluster)
    if not ports:
        raise ServeServiceError(
            "Please specify a port named 'serve' (or with the prefix 'serve-', e.g. 'serve-grpc') in the Ray "
            "head container; otherwise, the Kubernetes service for Ray Serve will not be created."
        )
    service_type = (cluster_spec_of(rayservice).get("headGroupSpec") or {}).get("serviceType") or "ClusterIP"
    labels = {
        c.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY: name,
        c.RAY_ORIGINATED_FROM_CRD_LABEL_KEY: c.CRD_RAYSERVICE,
        c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY: f"{name}-serve",
    }
    # Owned by the cluster it serves (in the RayService's namespace), so it goes with it.
    return new_child(
        SERVICES,
        cluster_serve_service_name(name),
        cluster,
        labels=labels,
        spec={
            "selector": {
                c.RAY_CLUSTER_LABEL_KEY: name,
                c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY: c.SERVE_LABEL_TRUE,
            },
            "ports": ports,
            "type": service_type,
        },
    )
