"""The ``GET /api/serve/applications/`` document, shaped like Ray 2.60's ``ServeInstanceDetails``.

Clients (the operator's dashboard client, ``serve status``) read this document, so its keys, the
absent node fields of an unscheduled replica and the empty document before Serve starts follow
what a real Ray 2.60 head returned (``ray-serve-behaviour.md`` §4).
"""

from __future__ import annotations

import hashlib
from typing import Any

from controllers.raysim.serve_state import App, Deployment, Replica, ServeController

__all__ = ["EMPTY_DOCUMENT", "serve_details"]

EMPTY_DOCUMENT: dict[str, Any] = {
    "controller_info": {},
    "proxies": {},
    "applications": {},
    "target_capacity": None,
}


def _hex(seed: str, n: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:n]


def _replica(ctrl: ServeController, app: App, dep: Deployment, r: Replica) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "actor_name": f"SERVE_REPLICA::{app.name}#{dep.name}#{r.replica_id}",
        "replica_id": r.replica_id,
        "state": r.state,
        "start_time_s": r.start_time_s,
    }
    node = ctrl.nodes.get(r.node_id or "")
    if node is not None:
        doc.update(
            {
                "node_id": node.node_id,
                "node_ip": node.ip,
                "node_instance_id": "",
                "actor_id": _hex("actor" + r.replica_id, 32),
                "worker_id": _hex("worker" + r.replica_id, 56),
                "log_file_path": f"/serve/replica_{app.name}_{dep.name}_{r.replica_id}.log",
                "pid": r.pid,
            }
        )
    return doc


def _deployment(ctrl: ServeController, app: App, dep: Deployment) -> dict[str, Any]:
    if dep.settled:
        status = "HEALTHY"
    else:
        status = dep.change
    return {
        "name": dep.name,
        "status": status,
        "status_trigger": dep.trigger,
        "message": dep.message,
        "deployment_config": dep.config,
        "target_num_replicas": dep.target,
        "required_resources": {"CPU": dep.num_cpus},
        "replicas": [_replica(ctrl, app, dep, r) for r in dep.replicas],
        "recent_dead_replicas": [],
    }


def _application(ctrl: ServeController, app: App) -> dict[str, Any]:
    ingress = app.known.ingress if app.known else None
    return {
        "name": app.name,
        "route_prefix": app.route_prefix if app.built else app.entry.get("route_prefix", "/"),
        "docs_path": None,
        "status": app.status,
        "message": app.message,
        "last_deployed_time_s": app.last_deployed_time_s,
        "deployed_app_config": app.entry,
        "source": "declarative",
        "deployments": {name: _deployment(ctrl, app, d) for name, d in app.deployments.items()},
        "external_scaler_enabled": False,
        "deployment_topology": {
            "app_name": app.name,
            "nodes": {
                name: {
                    "name": name,
                    "app_name": app.name,
                    "outbound_deployments": [],
                    "is_ingress": name == ingress,
                }
                for name in app.deployments
            },
            "ingress_deployment": ingress,
        }
        if app.deployments
        else None,
    }


def serve_details(ctrl: ServeController) -> dict[str, Any]:
    head = ctrl.head
    if not ctrl.started or head is None:
        return dict(EMPTY_DOCUMENT)
    port = int(ctrl.http_options.get("port", 8000))
    proxies = {
        nid: {
            "node_id": nid,
            "node_ip": ctrl.nodes[nid].ip,
            "node_instance_id": "",
            "actor_id": _hex("proxy" + nid, 32),
            "actor_name": f"SERVE_PROXY_ACTOR-{nid}",
            "worker_id": _hex("proxyworker" + nid, 56),
            "log_file_path": f"/serve/proxy_{ctrl.nodes[nid].ip}.log",
            "status": status,
        }
        for nid, (status, _) in ctrl.proxies.items()
        if nid in ctrl.nodes
    }
    targets = [
        {"ip": p["node_ip"], "port": port, "instance_id": "", "name": p["actor_name"]}
        for p in proxies.values()
        if p["status"] == "HEALTHY"
    ]
    return {
        "controller_info": {
            "node_id": head.node_id,
            "node_ip": head.ip,
            "node_instance_id": "",
            "actor_id": _hex("controller" + head.node_id, 32),
            "actor_name": "SERVE_CONTROLLER_ACTOR",
            "worker_id": _hex("controllerworker" + head.node_id, 56),
            "log_file_path": "/serve/controller.log",
        },
        "proxy_location": ctrl.proxy_location,
        "http_options": ctrl.http_options,
        "grpc_options": ctrl.grpc_options,
        "proxies": proxies,
        "applications": {name: _application(ctrl, app) for name, app in ctrl.apps.items()},
        "target_capacity": ctrl.target_capacity,
        "target_groups": [
            {"targets": targets, "route_prefix": "/", "protocol": "HTTP", "app_name": ""},
        ]
        if targets
        else [],
        "controller_health_metrics": {},
        "restores_unset_config_options": False,
    }
