"""A scriptable local HTTP server standing in for the API server in client unit tests.

Each test installs a handler (or a queue of canned responses) and then inspects the requests the
client actually sent: method, path, query, headers and body, exactly as they came over the wire.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from kuberay_py.client import Client, ClientConfig

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, str]
    raw_query: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Stub:
    server: TestServer | None = None
    requests: list[Seen] = field(default_factory=list)
    handler: Handler | None = None
    canned: list[web.StreamResponse] = field(default_factory=list)

    @property
    def url(self) -> str:
        assert self.server is not None
        return str(self.server.make_url("")).rstrip("/")

    def reply(self, status: int = 200, body: Any = None, headers: dict[str, str] | None = None) -> None:
        """Queue one JSON response (served in order, before the handler is consulted)."""
        raw = orjson.dumps(body) if body is not None else b""
        self.canned.append(
            web.Response(status=status, body=raw, headers=headers, content_type="application/json")
        )

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(
            Seen(
                method=request.method,
                path=request.path,
                query=dict(request.query),
                raw_query=request.query_string,
                headers=dict(request.headers),
                body=await request.read(),
            )
        )
        if self.canned:
            return self.canned.pop(0)
        if self.handler is not None:
            return await self.handler(request)
        return web.json_response({"kind": "Status", "code": 404, "reason": "NotFound"}, status=404)


def status(code: int, reason: str, message: str = "", **details: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message or reason,
    }
    if details:
        body["details"] = details
    return body


@pytest.fixture
async def stub() -> AsyncIterator[Stub]:
    s = Stub()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", s.dispatch)
    s.server = TestServer(app, host="127.0.0.1")
    await s.server.start_server()
    try:
        yield s
    finally:
        await s.server.close()


@pytest.fixture
async def client(stub: Stub) -> AsyncIterator[Client]:
    async with Client(ClientConfig(host=stub.url, token="Bearer t0k3n", timeout=5.0)) as c:
        yield c


# -- TLS (a CA, a server certificate for 127.0.0.1 and a client certificate) ----------------------


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl not installed")
    d = tmp_path_factory.mktemp("pki")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl(
        "req",
        "-x509",
        *ec,
        "-keyout",
        f"{d}/ca.key",
        "-out",
        f"{d}/ca.crt",
        "-subj",
        "/CN=test-ca",
        "-days",
        "2",
    )
    for name, extra in (("server", ["-addext", "subjectAltName=IP:127.0.0.1"]), ("client", [])):
        _openssl(
            "req",
            *ec,
            "-keyout",
            f"{d}/{name}.key",
            "-out",
            f"{d}/{name}.csr",
            "-subj",
            f"/CN={name}",
            *extra,
        )
        _openssl(
            "x509",
            "-req",
            "-in",
            f"{d}/{name}.csr",
            "-CA",
            f"{d}/ca.crt",
            "-CAkey",
            f"{d}/ca.key",
            "-CAcreateserial",
            "-out",
            f"{d}/{name}.crt",
            "-days",
            "2",
            "-copy_extensions",
            "copy",
        )
    return {
        "ca": f"{d}/ca.crt",
        "server_crt": f"{d}/server.crt",
        "server_key": f"{d}/server.key",
        "client_crt": f"{d}/client.crt",
        "client_key": f"{d}/client.key",
    }


@pytest.fixture
async def tls_server(tls: dict[str, str]) -> AsyncIterator[tuple[str, list[str | None]]]:
    peers: list[str | None] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        transport = request.transport
        cert = transport.get_extra_info("peercert") if transport else None
        subject = dict(x[0] for x in cert["subject"]) if cert else {}
        peers.append(subject.get("commonName"))
        return web.json_response({"kind": "Pod", "metadata": {"name": "a"}})

    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=tls["ca"])
    ctx.load_cert_chain(tls["server_crt"], tls["server_key"])
    ctx.verify_mode = ssl.CERT_OPTIONAL
    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server(ssl=ctx)
    try:
        yield f"https://127.0.0.1:{server.port}", peers
    finally:
        await server.close()
