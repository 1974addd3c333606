"""Gateway, HTTPRoute and per-cluster serve Service builders: KubeRay's shapes, drift and readiness."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controllers.rayservice.cluster import build_ray_cluster
from controllers.rayservice.gateway import (
    build_cluster_serve_service,
    build_gateway,
    build_httproute,
    gateway_differs,
    gateway_ready,
    httproute_differs,
    httproute_ready,
    route_weights,
)
from controllers.rayservice.services import ServeServiceError

OWNER = {
    "apiVersion": "ray.io/v1",
    "kind": "RayService",
    "name": "rayservice-incremental-upgrade",
    "uid": "svc-uid",
    "controller": True,
    "blockOwnerDeletion": True,
}


@pytest.fixture
def service(samples: Any) -> dict[str, Any]:
    obj: dict[str, Any] = samples("ray-service.incremental-upgrade.yaml")
    return obj


def cluster(service: dict[str, Any], name: str) -> dict[str, Any]:
    built = build_ray_cluster(service, name)
    built["metadata"]["uid"] = f"{name}-uid"
    return built


def test_gateway_shape(service: dict[str, Any]) -> None:
    assert build_gateway(service, "istio") == {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {
            "name": "rayservice-incremental-upgrade-gateway",
            "namespace": "ns",
            "ownerReferences": [OWNER],
        },
        "spec": {
            "gatewayClassName": "istio",
            "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}],
        },
    }


def test_gateway_drift_ignores_api_defaults(service: dict[str, Any]) -> None:
    desired = build_gateway(service, "istio")
    stored = copy.deepcopy(desired)
    stored["spec"]["listeners"][0]["allowedRoutes"] = {"namespaces": {"from": "Same"}}
    assert not gateway_differs(stored, desired)
    assert gateway_differs(stored, build_gateway(service, "envoy"))
    stored["spec"]["listeners"][0]["port"] = 8080
    assert gateway_differs(stored, desired)


def test_httproute_shape_and_weights(service: dict[str, Any]) -> None:
    a, b = cluster(service, "svc-aaaaa"), cluster(service, "svc-bbbbb")
    route = build_httproute(service, a, b, (75, 25))
    assert route["metadata"] == {
        "name": "rayservice-incremental-upgrade-httproute",
        "namespace": "ns",
        "ownerReferences": [OWNER],
    }
    assert route["spec"] == {
        "parentRefs": [{"name": "rayservice-incremental-upgrade-gateway", "namespace": "ns"}],
        "rules": [
            {
                "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                "backendRefs": [
                    {"name": "svc-aaaaa-serve-svc", "namespace": "ns", "port": 8000, "weight": 75},
                    {"name": "svc-bbbbb-serve-svc", "namespace": "ns", "port": 8000, "weight": 25},
                ],
            }
        ],
    }
    assert route_weights(route, "svc-aaaaa", "svc-bbbbb") == (75, 25)
    assert route_weights(route, "svc-aaaaa", "") == (75, -1)
    assert route_weights(None, "svc-aaaaa", "svc-bbbbb") == (-1, -1)
    single = build_httproute(service, a, None, (100, None))
    assert [r["name"] for r in single["spec"]["rules"][0]["backendRefs"]] == ["svc-aaaaa-serve-svc"]


def test_httproute_drift(service: dict[str, Any]) -> None:
    a, b = cluster(service, "svc-aaaaa"), cluster(service, "svc-bbbbb")
    desired = build_httproute(service, a, b, (50, 50))
    stored = copy.deepcopy(desired)
    stored["spec"]["parentRefs"][0].update(group="gateway.networking.k8s.io", kind="Gateway")
    for ref in stored["spec"]["rules"][0]["backendRefs"]:
        ref.update(group="", kind="Service")
    assert not httproute_differs(stored, desired)
    assert httproute_differs(stored, build_httproute(service, a, b, (25, 75)))
    assert httproute_differs(stored, build_httproute(service, a, None, (100, None)))


def test_backend_port_is_the_head_port_named_serve(service: dict[str, Any]) -> None:
    a = cluster(service, "svc-aaaaa")
    for port in a["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"]:
        if port["name"] == "serve":
            port["containerPort"] = 9000
    route = build_httproute(service, a, None, (100, None))
    assert route["spec"]["rules"][0]["backendRefs"][0]["port"] == 9000


def test_readiness_follows_the_status_conditions(service: dict[str, Any]) -> None:
    gw = build_gateway(service, "istio")
    assert not gateway_ready(gw)
    gw["status"] = {
        "conditions": [{"type": "Accepted", "status": "True"}, {"type": "Programmed", "status": "False"}]
    }
    assert not gateway_ready(gw)
    gw["status"]["conditions"][1]["status"] = "True"
    assert gateway_ready(gw)

    route = build_httproute(service, cluster(service, "svc-aaaaa"), None, (100, None))
    parent = {"parentRef": {"name": "rayservice-incremental-upgrade-gateway"}, "controllerName": "x/y"}
    route["status"] = {"parents": [{**parent, "conditions": [{"type": "Accepted", "status": "True"}]}]}
    assert not httproute_ready(route, gw)
    route["status"]["parents"][0]["conditions"].append({"type": "ResolvedRefs", "status": "True"})
    assert httproute_ready(route, gw)
    route["status"]["parents"][0]["parentRef"]["namespace"] = "other"
    assert not httproute_ready(route, gw)


def test_cluster_serve_service(service: dict[str, Any]) -> None:
    a = cluster(service, "svc-aaaaa")
    svc = build_cluster_serve_service(service, a)
    assert svc["metadata"] == {
        "name": "svc-aaaaa-serve-svc",
        "namespace": "ns",
        "labels": {
            "ray.io/originated-from-cr-name": "svc-aaaaa",
            "ray.io/originated-from-crd": "RayService",
            "ray.io/serve": "svc-aaaaa-serve",
        },
        "ownerReferences": [
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayCluster",
                "name": "svc-aaaaa",
                "uid": "svc-aaaaa-uid",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    assert svc["spec"] == {
        "selector": {"ray.io/cluster": "svc-aaaaa", "ray.io/serve": "true"},
        "ports": [{"name": "serve", "port": 8000}],
        "type": "ClusterIP",
    }
    a["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "dashboard", "containerPort": 8265}
    ]
    with pytest.raises(ServeServiceError, match="port named 'serve'"):
        build_cluster_serve_service(service, a)
