"""Services a RayCluster owns: the head Service, the optional serve Service, the headless worker one.

The head Service builder is the kit's (``controllers.common.head_service``: the RayService
controller builds its own head Service from it); it is re-exported here for this package.
"""

from __future__ import annotations

from typing import Any

from controllers import constants as C
from controllers.common import cluster as common
from controllers.common.head_service import (
    build_head_service,
    head_service_selector,
    port_list,
    service_ports,
)

__all__ = [
    "build_head_service",
    "build_headless_worker_service",
    "build_serve_service",
    "head_service_selector",
    "service_ports",
]


def build_serve_service(cluster: dict[str, Any]) -> dict[str, Any] | None:
    """``<cluster>-serve-svc`` for a plain cluster annotated ``ray.io/enable-serve-service``.

    Returns None when the head declares no ``serve``/``serve-*`` port (nothing to expose).
    """
    ports = {
        name: port
        for name, port in service_ports(cluster).items()
        if name == C.SERVING_PORT_NAME or name.startswith(C.SERVING_PORT_NAME + "-")
    }
    if not ports:
        return None
    name = cluster["metadata"]["name"]
    head_spec = common.spec_of(cluster).get("headGroupSpec") or {}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": common.serve_service_name(name),
            "namespace": cluster["metadata"]["namespace"],
            "labels": {
                C.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY: name,
                C.RAY_ORIGINATED_FROM_CRD_LABEL_KEY: C.CRD_RAYCLUSTER,
                C.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY: f"{name}-serve",
            },
            "ownerReferences": [common.controller_ref(cluster)],
        },
        "spec": {
            "selector": {C.RAY_CLUSTER_LABEL_KEY: name},
            "ports": port_list(ports),
            "type": head_spec.get("serviceType") or "ClusterIP",
        },
    }


def build_headless_worker_service(cluster: dict[str, Any]) -> dict[str, Any]:
    """Stable DNS for multi-host workers (``numOfHosts > 1``), ready or not."""
    name = cluster["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": common.headless_service_name(cluster),
            "namespace": cluster["metadata"]["namespace"],
            # KubeRay labels it with ray.io/headless-worker-svc only (not ray.io/cluster).
            "labels": {C.RAY_CLUSTER_HEADLESS_SERVICE_LABEL_KEY: name},
            "ownerReferences": [common.controller_ref(cluster)],
        },
        "spec": {
            "clusterIP": "None",
            "selector": {C.RAY_CLUSTER_LABEL_KEY: name, C.RAY_NODE_TYPE_LABEL_KEY: C.NODE_TYPE_WORKER},
            "publishNotReadyAddresses": True,
        },
    }
