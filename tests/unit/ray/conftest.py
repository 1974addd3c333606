"""A tiny local HTTP server per test, standing in for a Ray dashboard or a head's Serve proxy."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import pytest
from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class LocalServer:
    """Records every request; ``handler`` can be swapped by the test at any time."""

    handler: Handler
    host: str = "127.0.0.1"
    port: int = 0
    requests: list[web.Request] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    peers: list[tuple[str, int]] = field(default_factory=list)
    active: int = 0
    max_active: int = 0
    release: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(request)
        self.bodies.append(await request.read())
        peer = request.transport.get_extra_info("peername") if request.transport else None
        if peer:
            self.peers.append((peer[0], peer[1]))
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            return await self.handler(request)
        finally:
            self.active -= 1

    async def hang(self, request: web.Request) -> web.StreamResponse:
        """A handler that answers only when the test sets ``release``."""
        await self.release.wait()
        return web.Response(text="success")


async def until(predicate: Callable[[], bool], turns: int = 5000) -> None:
    """Yield to the loop until ``predicate`` holds (bounded: fails instead of hanging)."""
    for _ in range(turns):
        if predicate():
            return
        await asyncio.sleep(0.001 if _ > 100 else 0)
    raise AssertionError("condition never became true")


ServerFactory = Callable[[Handler], Awaitable[LocalServer]]


@pytest.fixture
async def http_server() -> AsyncIterator[ServerFactory]:
    runners: list[web.AppRunner] = []
    servers: list[LocalServer] = []

    async def start(handler: Handler) -> LocalServer:
        server = LocalServer(handler=handler)
        app = web.Application()

        async def route(request: web.Request) -> web.StreamResponse:
            return await server._dispatch(request)

        app.router.add_route("*", "/{tail:.*}", route)
        runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.1)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        sock = site._server.sockets[0]  # type: ignore[union-attr]
        server.port = sock.getsockname()[1]
        runners.append(runner)
        servers.append(server)
        return server

    yield start
    for s in servers:
        s.release.set()
    for r in runners:
        await r.cleanup()


@pytest.fixture
def wait_until() -> Callable[[Callable[[], bool]], Awaitable[None]]:
    return until


@pytest.fixture
def refused_port() -> int:
    """A port nothing listens on (bound then released), for connection-refused cases."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
