"""The two Services a RayService owns: ``<svc>-head-svc`` and the serve Service (pure builders).

Both select the cluster that currently serves; the reconciler re-points them (a new
``ray.io/cluster`` selector) only at promotion, so traffic moves in one step from the old cluster
to a new one whose applications are all RUNNING and that already has ready serve endpoints.

The serve Service selects ``{ray.io/cluster: <cluster>, ray.io/serve: "true"}``: workers carry
``ray.io/serve=true`` and join through their readiness probe (raylet && proxy ``/-/healthz``); the
head joins when the operator's head-proxy health checker flips its label to ``"true"``.
"""

from __future__ import annotations

import copy
from typing import Any

from controllers import constants as c
from controllers.common import cluster as common
from controllers.common.head_service import build_head_service, service_ports
from controllers.rayservice.cluster import cluster_spec_of

__all__ = [
    "ServeServiceError",
    "build_rayservice_head_service",
    "build_rayservice_serve_service",
    "head_service_name",
    "is_serve_port_name",
    "serve_ports",
    "serve_service_name",
]


class ServeServiceError(ValueError):
    """No port to expose for Serve (neither on the head container nor in ``spec.serveService``)."""


def is_serve_port_name(name: str) -> bool:
    return name == c.SERVING_PORT_NAME or name.startswith(c.SERVING_PORT_NAME + "-")


def head_service_name(rayservice: dict[str, Any]) -> str:
    return common.check_name(f"{rayservice['metadata']['name']}-{c.HEAD_SERVICE_SUFFIX}")


def serve_service_name(rayservice: dict[str, Any]) -> str:
    """``spec.serveService.metadata.name`` when set, else ``<svc>-serve-svc``."""
    custom = (((rayservice.get("spec") or {}).get("serveService") or {}).get("metadata") or {}).get("name")
    return str(custom) if custom else common.serve_service_name(rayservice["metadata"]["name"])


def serve_ports(cluster: dict[str, Any]) -> list[dict[str, Any]]:
    """Head container ports named ``serve`` or ``serve-*`` (e.g. ``serve-grpc``), sorted by name."""
    ports = service_ports(cluster)
    return [{"name": name, "port": ports[name]} for name in sorted(ports) if is_serve_port_name(name)]


def _owner_ref(rayservice: dict[str, Any]) -> dict[str, Any]:
    return common.controller_ref(
        {**rayservice, "apiVersion": rayservice.get("apiVersion") or "ray.io/v1", "kind": "RayService"}
    )


def build_rayservice_head_service(rayservice: dict[str, Any], cluster: dict[str, Any]) -> dict[str, Any]:
    """The cluster's head Service, renamed ``<svc>-head-svc`` and owned by the RayService."""
    svc = build_head_service(cluster)
    name = rayservice["metadata"]["name"]
    svc["metadata"] = {
        "name": head_service_name(rayservice),
        "namespace": rayservice["metadata"]["namespace"],
        "labels": {
            c.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY: name,
            c.RAY_ORIGINATED_FROM_CRD_LABEL_KEY: c.CRD_RAYSERVICE,
            c.RAY_NODE_TYPE_LABEL_KEY: c.NODE_TYPE_HEAD,
            c.RAY_ID_LABEL_KEY: common.check_name(f"{name}-{c.NODE_TYPE_HEAD}"),
        },
        "ownerReferences": [_owner_ref(rayservice)],
    }
    return svc


def build_rayservice_serve_service(rayservice: dict[str, Any], cluster: dict[str, Any]) -> dict[str, Any]:
    """KubeRay's BuildServeServiceForRayService, including a user-provided ``spec.serveService``."""
    meta = rayservice["metadata"]
    name = meta["name"]
    labels = {
        c.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY: name,
        c.RAY_ORIGINATED_FROM_CRD_LABEL_KEY: c.CRD_RAYSERVICE,
        c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY: f"{name}-serve",
    }
    selector = {
        c.RAY_CLUSTER_LABEL_KEY: cluster["metadata"]["name"],
        c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY: c.SERVE_LABEL_TRUE,
    }
    default_type = (cluster_spec_of(rayservice).get("headGroupSpec") or {}).get("serviceType") or "ClusterIP"
    ports = serve_ports(cluster)
    head_ports = (
        ((cluster.get("spec") or {}).get("headGroupSpec") or {}).get("template", {}).get("spec", {})
    ).get("containers") or [{}]
    serve_declared_in_head = any(
        p.get("name") == c.SERVING_PORT_NAME for p in head_ports[c.RAY_CONTAINER_INDEX].get("ports") or []
    )
    user = (rayservice.get("spec") or {}).get("serveService")
    if user is None:
        if not ports:
            raise ServeServiceError(
                "Please specify the port named 'serve' in the Ray head container; "
                "otherwise, the Kubernetes service for Ray Serve will not be created."
            )
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": serve_service_name(rayservice),
                "namespace": meta["namespace"],
                "labels": labels,
                "ownerReferences": [_owner_ref(rayservice)],
            },
            "spec": {"selector": selector, "ports": ports, "type": default_type},
        }

    svc = copy.deepcopy(user)
    svc_meta = svc.setdefault("metadata", {})
    svc_spec = svc.setdefault("spec", {})
    svc_spec["selector"] = selector
    if not (serve_declared_in_head and ports):
        user_serve = [
            {"name": p["name"], "port": p["port"]}
            for p in svc_spec.get("ports") or []
            if p.get("name") == c.SERVING_PORT_NAME
        ][:1]
        if user_serve:
            ports = user_serve
        elif not ports:
            raise ServeServiceError(
                "Please specify the port named 'serve' in the Ray head container "
                "or in RayService.Spec.ServeService"
            )
    svc_spec["ports"] = ports
    svc_spec.setdefault("type", default_type)
    svc_labels = dict(svc_meta.get("labels") or {})
    svc_labels.update(labels)  # the operator's labels win
    svc_meta["labels"] = svc_labels
    svc_meta["name"] = serve_service_name(rayservice)
    svc_meta["namespace"] = meta["namespace"]
    svc_meta["ownerReferences"] = [_owner_ref(rayservice)]
    for field in ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"):
        svc_meta.pop(field, None)
    return {"apiVersion": "v1", "kind": "Service", **svc}
