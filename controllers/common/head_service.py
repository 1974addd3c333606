"""A RayCluster's head Service and the ports it exposes: one builder for every controller.

The RayCluster controller creates it for its cluster; the RayService controller builds its own
``<svc>-head-svc`` from the same Service renamed and relabelled (KubeRay builds both with
``BuildServiceForHeadPod`` in ``common/service.go``).

Head Service: every head container port (defaults when none are declared), ``metrics`` always,
``appProtocol: tcp``, sorted by name; headless (``clusterIP: None``,
``publishNotReadyAddresses``) for ClusterIP unless ``ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE``, so
workers reach the GCS before the head is Ready.
"""

from __future__ import annotations

from typing import Any

from controllers import constants as C
from controllers.common import cluster as common
from kuberay_py.objects import json_copy

__all__ = ["build_head_service", "head_service_selector", "port_list", "service_ports"]

_DEFAULT_PORTS = {
    C.CLIENT_PORT_NAME: C.DEFAULT_CLIENT_PORT,
    C.GCS_SERVER_PORT_NAME: C.DEFAULT_GCS_SERVER_PORT,
    C.DASHBOARD_PORT_NAME: C.DEFAULT_DASHBOARD_PORT,
    C.METRICS_PORT_NAME: C.DEFAULT_METRICS_PORT,
    C.SERVING_PORT_NAME: C.DEFAULT_SERVING_PORT,
}


def head_service_selector(cluster: dict[str, Any]) -> dict[str, str]:
    """KubeRay's head selector, including the two ``app.kubernetes.io`` labels every Ray Pod has."""
    name = cluster["metadata"]["name"]
    return {
        C.RAY_CLUSTER_LABEL_KEY: name,
        C.RAY_NODE_TYPE_LABEL_KEY: C.NODE_TYPE_HEAD,
        C.RAY_ID_LABEL_KEY: common.check_name(f"{name}-{C.NODE_TYPE_HEAD}"),
        C.KUBERNETES_APPLICATION_NAME_LABEL_KEY: C.APPLICATION_NAME,
        C.KUBERNETES_CREATED_BY_LABEL_KEY: C.COMPONENT_NAME,
    }


def _head_ray_container(cluster: dict[str, Any]) -> dict[str, Any]:
    head = (common.spec_of(cluster).get("headGroupSpec") or {}).get("template") or {}
    containers = (head.get("spec") or {}).get("containers") or [{}]
    first: dict[str, Any] = containers[C.RAY_CONTAINER_INDEX]
    return first


def service_ports(cluster: dict[str, Any]) -> dict[str, int]:
    """Name -> port of the head's Ray container (KubeRay ``getServicePorts``)."""
    declared = _head_ray_container(cluster).get("ports") or []
    ports: dict[str, int] = {}
    for port in declared:
        number = int(port["containerPort"])
        ports[str(port.get("name") or f"{number}-port")] = number
    if not ports:
        ports = dict(_DEFAULT_PORTS)
    ports.setdefault(C.METRICS_PORT_NAME, C.DEFAULT_METRICS_PORT)
    return ports


def port_list(ports: dict[str, int]) -> list[dict[str, Any]]:
    return [
        {"name": name, "port": ports[name], "appProtocol": C.DEFAULT_SERVICE_APP_PROTOCOL}
        for name in sorted(ports)
    ]


def build_head_service(cluster: dict[str, Any], *, cluster_ip_service: bool = False) -> dict[str, Any]:
    head_spec = common.spec_of(cluster).get("headGroupSpec") or {}
    template = json_copy(head_spec.get("headService") or {})
    meta = template.get("metadata") or {}
    svc_spec = template.get("spec") or {}
    selector = head_service_selector(cluster)
    labels = dict(meta.get("labels") or {})
    labels.update({k: v for k, v in selector.items() if k != C.KUBERNETES_APPLICATION_NAME_LABEL_KEY})
    labels.setdefault(C.KUBERNETES_APPLICATION_NAME_LABEL_KEY, C.APPLICATION_NAME)
    annotations = dict(meta.get("annotations") or {})
    annotations.update(common.spec_of(cluster).get("headServiceAnnotations") or {})
    metadata: dict[str, Any] = {
        "name": common.head_service_name(cluster),
        "namespace": cluster["metadata"]["namespace"],
        "labels": labels,
        "ownerReferences": [common.controller_ref(cluster)],
    }
    if annotations:
        metadata["annotations"] = annotations
    ports = port_list(service_ports(cluster))
    existing = {p.get("name") for p in svc_spec.get("ports") or []}
    svc_spec["ports"] = list(svc_spec.get("ports") or []) + [p for p in ports if p["name"] not in existing]
    svc_spec["selector"] = selector
    svc_type = svc_spec.get("type") or head_spec.get("serviceType") or "ClusterIP"
    svc_spec["type"] = svc_type
    if svc_type == "ClusterIP" and not cluster_ip_service and "clusterIP" not in svc_spec:
        svc_spec["clusterIP"] = "None"
        svc_spec["publishNotReadyAddresses"] = True
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": svc_spec}
