"""The head Ingress (``headGroupSpec.enableIngress``) routing to the dashboard port.

``kubernetes.io/ingress.class`` on the RayCluster becomes ``ingressClassName``; every other CR
annotation is copied onto the Ingress (KubeRay ``common/ingress.go``).
"""

from __future__ import annotations

import copy
from typing import Any

from controllers import constants as C
from controllers.common import cluster as common
from controllers.raycluster.services import service_ports

__all__ = ["build_ingress", "ingress_name"]


def ingress_name(cluster: dict[str, Any]) -> str:
    return common.check_name(f"{cluster['metadata']['name']}-{C.INGRESS_SUFFIX}")


def build_ingress(cluster: dict[str, Any]) -> dict[str, Any]:
    head_spec = common.spec_of(cluster).get("headGroupSpec") or {}
    options = head_spec.get("ingressOptions") or {}
    annotations = dict(cluster["metadata"].get("annotations") or {})
    ingress_class = annotations.pop(C.INGRESS_CLASS_ANNOTATION_KEY, None)
    port = service_ports(cluster).get(C.DASHBOARD_PORT_NAME, C.DEFAULT_DASHBOARD_PORT)
    path = {
        "path": options.get("path") or "/",
        "pathType": options.get("pathType") or "Prefix",
        "backend": {"service": {"name": common.head_service_name(cluster), "port": {"number": port}}},
    }
    rule: dict[str, Any] = {"http": {"paths": [path]}}
    if options.get("host"):
        rule["host"] = options["host"]
    spec: dict[str, Any] = {"rules": [rule]}
    if ingress_class:
        spec["ingressClassName"] = ingress_class
    if options.get("tls"):
        spec["tls"] = copy.deepcopy(options["tls"])
    metadata: dict[str, Any] = {
        "name": ingress_name(cluster),
        "namespace": cluster["metadata"]["namespace"],
        "labels": {
            C.RAY_CLUSTER_LABEL_KEY: cluster["metadata"]["name"],
            C.KUBERNETES_APPLICATION_NAME_LABEL_KEY: C.APPLICATION_NAME,
            C.KUBERNETES_CREATED_BY_LABEL_KEY: C.COMPONENT_NAME,
        },
        "ownerReferences": [common.controller_ref(cluster)],
    }
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": metadata, "spec": spec}
