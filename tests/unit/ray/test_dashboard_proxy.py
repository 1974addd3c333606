"""Dashboards through the API server's ``services/proxy`` (KubeRay's ``--use-kubernetes-proxy``).

The local server stands in for the API server: what matters here is the URL the operator builds,
that the API credential and the Ray token travel in their own headers, and KubeRay's timeouts.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from controllers.common.heads import dashboard_client, dashboard_url
from controllers.ray.dashboard import (
    DEFAULT_DASHBOARD_TIMEOUT,
    PROXIED_DASHBOARD_TIMEOUT,
    DashboardClientFactory,
)
from controllers.ray.health import HeadProxyHealthChecker, HeadTarget
from controllers.ray.jobs import JobSubmission, RayJobs
from kuberay_py.client import ClientConfig


def head(cluster: str = "raycluster-kuberay", namespace: str = "ns") -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"{cluster}-head-x",
            "namespace": namespace,
            "labels": {"ray.io/cluster": cluster},
        },
        "spec": {
            "containers": [{"name": "ray-head", "ports": [{"name": "dashboard", "containerPort": 8265}]}]
        },
        "status": {"podIP": "10.244.0.7", "phase": "Running"},
    }


def test_direct_url_is_the_pod_ip() -> None:
    assert dashboard_url(head()) == "http://10.244.0.7:8265"


def test_proxied_url_names_the_head_service_and_its_dashboard_port() -> None:
    cluster = {"metadata": {"name": "raycluster-kuberay"}, "spec": {"headGroupSpec": {}}}
    assert dashboard_url(head(), cluster, proxy_host="https://api:6443") == (
        "https://api:6443/api/v1/namespaces/ns/services/raycluster-kuberay-head-svc:dashboard/proxy"
    )


def test_proxied_url_prefers_the_status_service_name_then_the_custom_one() -> None:
    custom = {"headGroupSpec": {"headService": {"metadata": {"name": "my-head"}}}}
    cluster: dict[str, Any] = {"metadata": {"name": "c"}, "spec": custom}
    assert "/services/my-head:dashboard/proxy" in dashboard_url(head("c"), cluster, proxy_host="https://a")
    cluster["status"] = {"head": {"serviceName": "from-status"}}
    assert "/services/from-status:dashboard/proxy" in dashboard_url(
        head("c"), cluster, proxy_host="https://a"
    )
    # No cluster in the cache (being deleted): the generated name from the Pod's cluster label.
    assert "/services/c-head-svc:dashboard/proxy" in dashboard_url(head("c"), None, proxy_host="https://a")


def test_timeouts_are_kuberays_two_constants() -> None:
    assert DashboardClientFactory().timeout == DEFAULT_DASHBOARD_TIMEOUT == 2.0
    proxied = DashboardClientFactory(kubernetes_proxy=ClientConfig(host="http://127.0.0.1:1"))
    assert proxied.timeout == PROXIED_DASHBOARD_TIMEOUT == 10.0
    assert proxied.proxy_host == "http://127.0.0.1:1"
    assert DashboardClientFactory().proxy_host is None


async def test_requests_carry_the_api_credential_and_the_ray_token_separately(http_server) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response({"job_id": "j1", "submission_id": "s1"})

    server = await http_server(handler)
    calls = 0

    async def rotating() -> str | None:
        nonlocal calls
        calls += 1
        return f"Bearer sa-token-{calls}"

    factory = DashboardClientFactory(kubernetes_proxy=ClientConfig(host=server.url, token_source=rotating))
    try:
        cluster = {"metadata": {"name": "raycluster-kuberay"}, "spec": {}}
        jobs = RayJobs(dashboard_client(factory, head(), cluster, "ray-secret"))
        await jobs.submit(JobSubmission("echo", "s1"))
        await jobs.submit(JobSubmission("echo", "s2"))
    finally:
        await factory.close()
    first, second = server.requests
    assert (
        first.path == "/api/v1/namespaces/ns/services/raycluster-kuberay-head-svc:dashboard/proxy/api/jobs/"
    )
    assert first.headers["Authorization"] == "Bearer sa-token-1"
    assert second.headers["Authorization"] == "Bearer sa-token-2"  # asked again per request
    assert first.headers["x-ray-authorization"] == "Bearer ray-secret"


async def test_direct_requests_send_no_api_credential(http_server) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response({"job_id": "j1", "submission_id": "s1"})

    server = await http_server(handler)
    factory = DashboardClientFactory()
    try:
        await RayJobs(factory.client(server.url)).submit(JobSubmission("echo"))
    finally:
        await factory.close()
    assert "Authorization" not in server.requests[0].headers


async def test_head_proxy_checks_go_through_pods_proxy(http_server) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(text="success")

    server = await http_server(handler)
    checker = HeadProxyHealthChecker(kubernetes_proxy=ClientConfig(host=server.url, token="Bearer sa"))
    assert checker.timeout == PROXIED_DASHBOARD_TIMEOUT
    target = HeadTarget("ns", "rs-head-abc", "uid-1", "10.244.0.7", 8000, "ns/rs")
    try:
        result = await checker.check(target)
    finally:
        await checker.close()
    assert result.healthy
    (req,) = server.requests
    assert req.path == "/api/v1/namespaces/ns/pods/rs-head-abc:8000/proxy/-/healthz"
    assert req.headers["Authorization"] == "Bearer sa"
    assert HeadProxyHealthChecker().url(target) == "http://10.244.0.7:8000/-/healthz"
