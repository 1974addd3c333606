"""The ``services/proxy`` subresource, as kube-apiserver answers it.

A backend HTTP server listens on an address of a claimed pod network, as a Pod would; a Pod
object carries that address in its status, and a selector-less Service names it through an
Endpoints object whose ``targetRef`` is that Pod: kube-apiserver resolves ``services/proxy``
through core/v1 Endpoints and dials only an address its Pod still has, and so does the built-in
server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
import pytest
import pytest_asyncio
from aiohttp import web

from kuberay_py.client import Client
from kuberay_py.client import resources as r
from kuberay_py.envtest import Environment
from tests.api_objects import make_pod


@dataclass
class Backend:
    address: str
    port: int
    seen: list[dict[str, Any]]


@pytest_asyncio.fixture(loop_scope="session")
async def backend(envtest: Environment) -> AsyncIterator[Backend]:
    network = envtest.claim_pod_network()
    address = network.allocator().allocate()
    seen: list[dict[str, Any]] = []

    async def echo(request: web.Request) -> web.Response:
        body = await request.read()
        seen.append(
            {
                "method": request.method,
                "path": request.path,
                "query": request.query_string,
                "headers": {k.lower(): v for k, v in request.headers.items()},
                "body": body,
            }
        )
        return web.json_response({"path": request.path}, status=201 if request.method == "POST" else 200)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", echo)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, address, 0)
    await site.start()
    server = site._server
    assert server is not None
    port = getattr(server, "sockets", [])[0].getsockname()[1]
    try:
        yield Backend(address, port, seen)
    finally:
        await runner.cleanup()


async def publish(
    k8s: Client,
    namespace: str,
    backend: Backend,
    *,
    ready: bool = True,
    target: bool = True,
    pod_ip: str | None = None,
) -> None:
    """Service ``dash`` (port ``dashboard``) whose Endpoints lists ``backend`` as the address of Pod
    ``dash-0``; ``pod_ip`` gives the Pod another address, ``target=False`` drops the ``targetRef``."""
    await make_pod(k8s, namespace, pod_ip or backend.address, name="dash-0")
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "dash"},
        "spec": {"ports": [{"name": "dashboard", "port": 8265, "targetPort": backend.port}]},
    }
    await k8s.create(r.SERVICES, service, namespace)
    address: dict[str, Any] = {"ip": backend.address}
    if target:
        address["targetRef"] = {"kind": "Pod", "namespace": namespace, "name": "dash-0"}
    endpoints = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": "dash"},
        "subsets": [
            {
                ("addresses" if ready else "notReadyAddresses"): [address],
                "ports": [{"name": "dashboard", "port": backend.port}],
            }
        ],
    }
    await k8s.create(r.ENDPOINTS, endpoints, namespace)


async def call(
    envtest: Environment,
    method: str,
    path: str,
    *,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, bytes]:
    config = envtest.client_config
    sent = dict(headers or {})
    if config.token:
        sent["Authorization"] = config.token
    ssl: Any = config.ssl_context if config.ssl_context is not None else True
    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ssl)) as session,
        session.request(method, config.host.rstrip("/") + path, data=body, headers=sent) as resp,
    ):
        return resp.status, await resp.read()


def status_of(raw: bytes) -> dict[str, Any]:
    doc: dict[str, Any] = orjson.loads(raw)
    assert doc["kind"] == "Status", doc
    return doc


async def test_get_reaches_the_endpoint_with_path_query_and_headers(
    envtest: Environment, k8s: Client, namespace: str, backend: Backend
) -> None:
    await publish(k8s, namespace, backend)
    code, raw = await call(
        envtest,
        "GET",
        f"/api/v1/namespaces/{namespace}/services/dash:dashboard/proxy/api/jobs/abc?x=1",
        headers={"x-ray-authorization": "Bearer ray-token"},
    )
    assert code == 200, raw
    assert orjson.loads(raw) == {"path": "/api/jobs/abc"}
    last = backend.seen[-1]
    assert (last["method"], last["path"], last["query"]) == ("GET", "/api/jobs/abc", "x=1")
    assert last["headers"]["x-ray-authorization"] == "Bearer ray-token"
    assert "authorization" not in last["headers"]  # the API server's credential stays with it


async def test_post_body_and_status_pass_through_and_a_port_number_is_mapped(
    envtest: Environment, k8s: Client, namespace: str, backend: Backend
) -> None:
    await publish(k8s, namespace, backend)
    code, _ = await call(
        envtest,
        "POST",
        f"/api/v1/namespaces/{namespace}/services/http:dash:8265/proxy/api/jobs/",
        body=b'{"entrypoint": "echo"}',
        headers={"Content-Type": "application/json"},
    )
    assert code == 201
    assert backend.seen[-1]["body"] == b'{"entrypoint": "echo"}'
    assert backend.seen[-1]["path"] == "/api/jobs/"


async def test_no_ready_endpoint_is_503_naming_the_whole_id(
    envtest: Environment, k8s: Client, namespace: str, backend: Backend
) -> None:
    await publish(k8s, namespace, backend, ready=False)
    code, raw = await call(envtest, "GET", f"/api/v1/namespaces/{namespace}/services/dash:dashboard/proxy/")
    assert code == 503
    status = status_of(raw)
    assert (status["reason"], status["message"]) == (
        "ServiceUnavailable",
        'no endpoints available for service "dash:dashboard"',
    )
    assert backend.seen == []


@pytest.mark.parametrize(
    ("why", "published"),
    [
        ("no targetRef", {"target": False}),
        ("the Pod has another IP", {"pod_ip": "10.244.255.254"}),
    ],
)
async def test_an_address_that_is_not_its_pods_ip_is_never_dialled(
    envtest: Environment, k8s: Client, namespace: str, backend: Backend, why: str, published: dict[str, Any]
) -> None:
    await publish(k8s, namespace, backend, **published)
    code, raw = await call(envtest, "GET", f"/api/v1/namespaces/{namespace}/services/dash/proxy/")
    assert code == 503, why
    assert status_of(raw)["message"] == 'no endpoints available for service "dash"'
    assert backend.seen == []


async def test_a_port_name_no_subset_offers_is_503_naming_the_whole_id(
    envtest: Environment, k8s: Client, namespace: str, backend: Backend
) -> None:
    await publish(k8s, namespace, backend)
    code, raw = await call(
        envtest, "GET", f"/api/v1/namespaces/{namespace}/services/https:dash:metrics/proxy/"
    )
    assert code == 503
    assert status_of(raw)["message"] == 'no endpoints available for service "https:dash:metrics"'


async def test_unknown_service_port_number_is_503(
    envtest: Environment, k8s: Client, namespace: str, backend: Backend
) -> None:
    await publish(k8s, namespace, backend)
    code, raw = await call(envtest, "GET", f"/api/v1/namespaces/{namespace}/services/dash:9999/proxy/")
    assert code == 503
    assert status_of(raw)["message"] == 'no service port 9999 found for service "dash"'


@pytest.mark.parametrize("service_id", ["bare", "bare:80"])
async def test_a_service_without_an_endpoints_object_is_404_naming_the_service(
    envtest: Environment, k8s: Client, namespace: str, service_id: str
) -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "bare"},
        "spec": {"ports": [{"port": 80}]},
    }
    await k8s.create(r.SERVICES, service, namespace)
    code, raw = await call(envtest, "GET", f"/api/v1/namespaces/{namespace}/services/{service_id}/proxy/")
    assert code == 404
    status = status_of(raw)
    assert (status["reason"], status["message"]) == ("NotFound", 'services "bare" not found')
    assert status["details"] == {"name": "bare", "kind": "services"}


async def test_an_endpoints_object_without_subsets_is_503_naming_the_service(
    envtest: Environment, k8s: Client, namespace: str
) -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "empty"},
        "spec": {"ports": [{"name": "dashboard", "port": 8265}]},
    }
    await k8s.create(r.SERVICES, service, namespace)
    await k8s.create(
        r.ENDPOINTS, {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "empty"}}, namespace
    )
    code, raw = await call(envtest, "GET", f"/api/v1/namespaces/{namespace}/services/empty:dashboard/proxy/")
    assert code == 503
    assert status_of(raw)["message"] == 'no endpoints available for service "empty"'


async def test_missing_service_is_404(envtest: Environment, namespace: str) -> None:
    code, raw = await call(envtest, "GET", f"/api/v1/namespaces/{namespace}/services/nope:dashboard/proxy/")
    assert code == 404
    status = status_of(raw)
    assert (status["reason"], status["message"]) == ("NotFound", 'services "nope" not found')


@pytest.mark.parametrize("service_id", ["ftp:dash:8265", "a:b:c:d", ":8265"])
async def test_malformed_service_id_is_400(envtest: Environment, namespace: str, service_id: str) -> None:
    code, raw = await call(envtest, "GET", f"/api/v1/namespaces/{namespace}/services/{service_id}/proxy/")
    assert code == 400
    assert status_of(raw)["message"] == f'invalid service request "{service_id}"'


async def test_endpoint_not_listening_is_503(envtest: Environment, k8s: Client, namespace: str) -> None:
    network = envtest.claim_pod_network()
    silent = Backend(network.allocator().allocate(), 9, [])  # nothing listens there
    await publish(k8s, namespace, silent)
    code, raw = await call(envtest, "GET", f"/api/v1/namespaces/{namespace}/services/dash:dashboard/proxy/")
    assert code == 503
    status = status_of(raw)
    assert status["reason"] == "ServiceUnavailable"
    assert status["message"].startswith(f"error trying to reach service: dial tcp {silent.address}:9: "), (
        status
    )


async def test_pod_proxy_reaches_the_pod_ip_and_port(
    envtest: Environment, k8s: Client, namespace: str, backend: Backend
) -> None:
    await make_pod(k8s, namespace, backend.address)
    code, raw = await call(
        envtest, "GET", f"/api/v1/namespaces/{namespace}/pods/head:{backend.port}/proxy/-/healthz"
    )
    assert code == 200, raw
    assert backend.seen[-1]["path"] == "/-/healthz"
    assert "authorization" not in backend.seen[-1]["headers"]


async def test_pod_proxy_without_an_address_is_400(envtest: Environment, k8s: Client, namespace: str) -> None:
    await make_pod(k8s, namespace, None)
    code, raw = await call(envtest, "GET", f"/api/v1/namespaces/{namespace}/pods/head:8000/proxy/-/healthz")
    assert code == 400
    status = status_of(raw)
    assert (status["reason"], status["message"]) == ("BadRequest", "address not allowed")


async def test_pod_proxy_of_a_missing_pod_is_404(envtest: Environment, namespace: str) -> None:
    code, raw = await call(envtest, "GET", f"/api/v1/namespaces/{namespace}/pods/nope:8000/proxy/")
    assert code == 404
    assert status_of(raw)["message"] == 'pods "nope" not found'
