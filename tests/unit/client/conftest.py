"""A scriptable local HTTP server standing in for the API server in client unit tests.

Each test installs a handler (or a queue of canned responses) and then inspects the requests the
client actually sent: method, path, query, headers and body, exactly as they came over the wire.
"""

from __future__ import annotations

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
