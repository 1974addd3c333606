"""The webhook server's HTTP contract, as kube-apiserver and controller-runtime define it: the
AdmissionReview answered with the request's uid, unreadable requests answered as errored reviews
(code 400, or 413 over the size cap), a handler's crash as an errored review (500), unknown paths
404, and the server only reachable over TLS."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import pytest_asyncio

from controllers.webhooks import setup_webhooks
from kuberay_py.envtest.controlplane import free_port
from kuberay_py.envtest.webhookcerts import WebhookCA
from kuberay_py.webhook import (
    AdmissionRequest,
    AdmissionResponse,
    WebhookServer,
    WebhookServerOptions,
    denied,
)
from kuberay_py.webhook.admission import MAX_REQUEST_BYTES
from kuberay_py.webhook.server import WebhookCertificateError
from tests.polling import eventually

CLUSTER = "/validate-ray-io-v1-raycluster"


async def _crash(_: AdmissionRequest) -> AdmissionResponse:
    raise RuntimeError("boom")


async def _deny(req: AdmissionRequest) -> AdmissionResponse:
    return denied(f"no {req.operation.lower()} today")


@pytest_asyncio.fixture
async def server(tmp_path: Path) -> AsyncIterator[tuple[WebhookServer, aiohttp.ClientSession]]:
    ca = WebhookCA(tmp_path / "ca")
    ca.issue(tmp_path / "certs")
    srv = WebhookServer(
        WebhookServerOptions(host="127.0.0.1", port=free_port(), cert_dir=str(tmp_path / "certs"))
    )
    setup_webhooks(srv)
    srv.register("/crash", _crash)
    srv.register("/deny", _deny)
    await srv.start()
    ctx = ssl.create_default_context(cadata=ca.ca_data.decode())
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx))
    try:
        yield srv, session
    finally:
        await session.close()
        await srv.stop()


def _review(uid: str = "u-1", **request: Any) -> bytes:
    body = {
        "uid": uid,
        "kind": {"group": "ray.io", "version": "v1", "kind": "RayCluster"},
        "operation": "CREATE",
        "name": "ok",
        "namespace": "default",
        "object": {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "ok"}, "spec": {}},
        **request,
    }
    return orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": body})


async def _post(
    server: tuple[WebhookServer, aiohttp.ClientSession],
    path: str,
    body: bytes,
    content_type: str = "application/json",
) -> tuple[int, dict[str, Any]]:
    srv, session = server
    async with session.post(f"{srv.url}{path}", data=body, headers={"Content-Type": content_type}) as resp:
        return resp.status, (await resp.json() if resp.content_type == "application/json" else {})


async def test_an_allowed_review_echoes_the_uid(server: tuple[WebhookServer, aiohttp.ClientSession]) -> None:
    status, doc = await _post(server, CLUSTER, _review("abc-123"))
    assert status == 200
    assert doc == {
        "kind": "AdmissionReview",
        "apiVersion": "admission.k8s.io/v1",
        "response": {"uid": "abc-123", "allowed": True, "status": {"metadata": {}, "code": 200}},
    }


async def test_a_v1beta1_review_is_answered_in_v1beta1(
    server: tuple[WebhookServer, aiohttp.ClientSession],
) -> None:
    doc = orjson.loads(_review("b-1"))
    doc["apiVersion"] = "admission.k8s.io/v1beta1"
    status, answer = await _post(server, CLUSTER, orjson.dumps(doc))
    assert status == 200 and answer["apiVersion"] == "admission.k8s.io/v1beta1"
    assert answer["response"]["uid"] == "b-1" and answer["response"]["allowed"] is True


async def test_an_invalid_object_is_denied_with_the_invalid_status(
    server: tuple[WebhookServer, aiohttp.ClientSession],
) -> None:
    obj = {"metadata": {"name": "a.b"}, "spec": {}}
    status, doc = await _post(server, CLUSTER, _review("u-2", object=obj, name="a.b"))
    assert status == 200
    response = doc["response"]
    assert response["uid"] == "u-2" and response["allowed"] is False
    result = response["status"]
    assert (result["code"], result["reason"]) == (422, "Invalid")
    assert result["message"].startswith(
        'RayCluster.ray.io "a.b" is invalid: metadata.name: Invalid value: "a.b": '
    )
    assert result["details"]["kind"] == "RayCluster" and result["details"]["group"] == "ray.io"


async def test_a_denied_response_is_forbidden(server: tuple[WebhookServer, aiohttp.ClientSession]) -> None:
    _, doc = await _post(server, "/deny", _review(operation="UPDATE"))
    assert doc["response"]["status"] == {
        "metadata": {},
        "code": 403,
        "reason": "Forbidden",
        "message": "no update today",
    }


@pytest.mark.parametrize(
    ("body", "content_type", "code", "message"),
    [
        (b"", "application/json", 400, "request body is empty"),
        (b"{}", "text/plain", 400, "contentType=text/plain, expected application/json"),
        (b"{nope", "application/json", 400, "couldn't decode the AdmissionReview: "),
        (
            b'{"apiVersion": "admission.k8s.io/v2", "kind": "AdmissionReview", "request": {}}',
            "application/json",
            400,
            "expected admission.k8s.io/v1, Kind=AdmissionReview, got apiVersion='admission.k8s.io/v2'",
        ),
        (b" " * (MAX_REQUEST_BYTES + 1), "application/json", 413, "request entity is too large; limit is "),
    ],
)
async def test_unreadable_requests_get_an_errored_review(
    server: tuple[WebhookServer, aiohttp.ClientSession],
    body: bytes,
    content_type: str,
    code: int,
    message: str,
) -> None:
    status, doc = await _post(server, CLUSTER, body, content_type)
    assert status == 200
    response = doc["response"]
    assert response["allowed"] is False and response["uid"] == ""
    assert response["status"]["code"] == code
    assert response["status"]["message"].startswith(message)


async def test_a_handler_crash_is_an_errored_review(
    server: tuple[WebhookServer, aiohttp.ClientSession],
) -> None:
    status, doc = await _post(server, "/crash", _review("u-3"))
    assert status == 200
    assert doc["response"] == {
        "uid": "u-3",
        "allowed": False,
        "status": {"metadata": {}, "code": 500, "message": "boom"},
    }


async def test_a_review_for_another_kind_is_a_bad_request(
    server: tuple[WebhookServer, aiohttp.ClientSession],
) -> None:
    kind = {"group": "ray.io", "version": "v1", "kind": "RayJob"}
    _, doc = await _post(server, CLUSTER, _review(kind=kind))
    assert doc["response"]["status"]["code"] == 400
    assert doc["response"]["status"]["message"] == "expected RayCluster.ray.io, got RayJob.ray.io"


async def test_connect_is_allowed_and_unknown_operations_are_bad_requests(
    server: tuple[WebhookServer, aiohttp.ClientSession],
) -> None:
    _, doc = await _post(server, CLUSTER, _review(operation="CONNECT"))
    assert doc["response"]["allowed"] is True
    _, doc = await _post(server, CLUSTER, _review(operation="PATCH"))
    assert doc["response"]["status"] == {"metadata": {}, "code": 400, "message": 'unknown operation "PATCH"'}


async def test_unknown_paths_and_methods(server: tuple[WebhookServer, aiohttp.ClientSession]) -> None:
    srv, session = server
    async with session.post(f"{srv.url}/validate-nothing", data=_review()) as resp:
        assert resp.status == 404
    async with session.get(f"{srv.url}{CLUSTER}") as resp:
        assert resp.status == 405


async def test_started_checker_and_plain_http(server: tuple[WebhookServer, aiohttp.ClientSession]) -> None:
    srv, _ = server
    await srv.started_checker()()  # raises when not serving
    assert srv.url is not None
    async with aiohttp.ClientSession() as plain:
        with pytest.raises(aiohttp.ClientError):
            async with plain.post(srv.url.replace("https://", "http://") + CLUSTER, data=_review()):
                pass


async def test_start_without_a_certificate_says_where_it_looked(tmp_path: Path) -> None:
    srv = WebhookServer(WebhookServerOptions(host="127.0.0.1", port=0, cert_dir=str(tmp_path)))
    with pytest.raises(WebhookCertificateError, match=f"needs tls.crt and tls.key in {tmp_path}"):
        await srv.start()
    assert srv.url is None


async def test_started_checker_fails_before_start() -> None:
    srv = WebhookServer()
    with pytest.raises(RuntimeError, match="not been started"):
        await srv.started_checker()()


def test_duplicate_paths_are_refused() -> None:
    srv = WebhookServer()
    setup_webhooks(srv)
    with pytest.raises(ValueError, match="duplicate path"):
        srv.register(CLUSTER, _deny)


async def test_stop_lets_a_review_in_flight_finish_and_then_refuses_connections(tmp_path: Path) -> None:
    ca = WebhookCA(tmp_path / "ca")
    ca.issue(tmp_path / "certs")
    entered, release = asyncio.Event(), asyncio.Event()

    async def slow(req: AdmissionRequest) -> AdmissionResponse:
        entered.set()
        await release.wait()
        return denied("finished after stop began")

    srv = WebhookServer(
        WebhookServerOptions(host="127.0.0.1", port=free_port(), cert_dir=str(tmp_path / "certs"))
    )
    srv.register("/slow", slow)
    await srv.start()
    url = srv.url
    ctx = ssl.create_default_context(cadata=ca.ca_data.decode())
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=ctx, force_close=True)) as session:

        async def call() -> dict[str, Any]:
            async with session.post(
                f"{url}/slow", data=_review(), headers={"Content-Type": "application/json"}
            ) as r:
                return dict(await r.json())

        in_flight = asyncio.create_task(call())
        await asyncio.wait_for(entered.wait(), 10)  # the request reached the handler
        stopping = asyncio.create_task(srv.stop())
        port = int(url.rsplit(":", 1)[1])

        async def listener_closed() -> bool:
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except ConnectionRefusedError:
                return True
            writer.close()
            return False

        await eventually(listener_closed, "the listener closed while a review is in flight", tolerate=())
        release.set()
        answer = await in_flight
        await stopping
        assert answer["response"]["status"]["message"] == "finished after stop began"
        with pytest.raises(aiohttp.ClientConnectionError):
            await call()
