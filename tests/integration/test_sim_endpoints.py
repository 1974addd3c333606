"""The simulator's Endpoints controller against the API server, and ``services/proxy`` through it.

kube-apiserver resolves ``services/proxy`` through core/v1 Endpoints, which in a cluster
kube-controller-manager writes; here the simulator does. The same assertions hold on the built-in
server and on a real kube-apiserver (``KUBEBUILDER_ASSETS``).
"""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web

from kuberay_py.client import ApiError, Client, NotFound, resources
from kuberay_py.envtest import Environment
from tests.polling import eventually

WAIT = 30.0  # eventual consistency on a loaded machine, not a performance figure


async def serve_on(ip: str, port: int) -> web.AppRunner:
    """What the Pod's container would serve: the path asked for and the address it answers on."""

    async def echo(request: web.Request) -> web.Response:
        return web.json_response({"path": request.path, "at": ip})

    app = web.Application()
    app.router.add_get("/{tail:.*}", echo)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, ip, port).start()
    return runner


async def test_endpoints_follow_the_pods_and_services_proxy_reaches_them(
    envtest_sim: Environment, k8s_sim: Client, namespace_sim: str
) -> None:
    k8s, ns = k8s_sim, namespace_sim
    manual_svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "manual"},
        "spec": {"ports": [{"port": 80}]},
    }
    await k8s.create(resources.SERVICES, manual_svc, ns)
    manual = await k8s.create(
        resources.ENDPOINTS, {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "manual"}}, ns
    )
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "labels": {"team": "ray"}},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "web", "port": 80, "targetPort": "http"}]},
    }
    await k8s.create(resources.SERVICES, service, ns)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-0", "labels": {"app": "web"}},
        "spec": {
            "containers": [
                {"name": "web", "image": "example/web:1", "ports": [{"name": "http", "containerPort": 8080}]}
            ]
        },
    }
    await k8s.create(resources.PODS, pod, ns)

    async def ready_endpoints() -> dict[str, Any] | None:
        eps = await k8s.get(resources.ENDPOINTS, "web", ns)
        subsets = eps.get("subsets") or []
        return eps if subsets and subsets[0].get("addresses") else None

    eps = await eventually(ready_endpoints, "web-0 a ready address of Endpoints web", WAIT)
    running = await k8s.get(resources.PODS, "web-0", ns)
    ip = running["status"]["podIP"]
    assert eps["subsets"] == [
        {
            "addresses": [
                {
                    "ip": ip,
                    "nodeName": running["spec"]["nodeName"],
                    "targetRef": {
                        "kind": "Pod",
                        "namespace": ns,
                        "name": "web-0",
                        "uid": running["metadata"]["uid"],
                    },
                }
            ],
            "ports": [{"name": "web", "port": 8080, "protocol": "TCP"}],
        }
    ]
    assert eps["metadata"]["labels"] == {"team": "ray"}
    assert "endpoints.kubernetes.io/last-change-trigger-time" in eps["metadata"]["annotations"]

    runner = await serve_on(ip, 8080)
    try:
        answer = await k8s.request("GET", f"/api/v1/namespaces/{ns}/services/web:web/proxy/hello")
        assert answer == {"path": "/hello", "at": ip}
    finally:
        await runner.cleanup()

    await k8s.delete(resources.PODS, "web-0", ns)

    async def emptied() -> bool:
        return not (await k8s.get(resources.ENDPOINTS, "web", ns)).get("subsets")

    await eventually(emptied, "the deleted Pod's address gone from Endpoints web", WAIT)
    with pytest.raises(ApiError) as unavailable:
        await k8s.request("GET", f"/api/v1/namespaces/{ns}/services/web:web/proxy/hello")
    assert (unavailable.value.status, unavailable.value.message) == (
        503,
        'no endpoints available for service "web"',
    )

    await k8s.delete(resources.SERVICES, "web", ns)

    async def gone() -> bool:
        try:
            await k8s.get(resources.ENDPOINTS, "web", ns)
        except NotFound:
            return True
        return False

    await eventually(gone, "Endpoints web deleted with its Service", WAIT)
    # A Service without a selector keeps the Endpoints its owner wrote, untouched.
    kept = await k8s.get(resources.ENDPOINTS, "manual", ns)
    assert kept["metadata"]["resourceVersion"] == manual["metadata"]["resourceVersion"]
