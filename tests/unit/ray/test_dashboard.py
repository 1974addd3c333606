from __future__ import annotations

import asyncio
import gc
import json

import pytest
from aiohttp import web

from controllers.ray.dashboard import (
    DashboardClientFactory,
    DashboardClosed,
    DashboardError,
    DashboardHTTPError,
    DashboardInvalidResponse,
    DashboardResponseTooLarge,
    DashboardTimeout,
    DashboardUnreachable,
)

RUNNING_DOC = {
    "controller_info": {"node_ip": "127.0.0.1"},
    "proxy_location": "EveryNode",
    "http_options": {"host": "0.0.0.0", "port": 9000},
    "proxies": {},
    "applications": {
        "fruit_app": {
            "name": "fruit_app",
            "route_prefix": "/fruit",
            "docs_path": None,
            "status": "RUNNING",
            "message": "",
            "deployments": {
                "Fruit": {
                    "name": "Fruit",
                    "status": "HEALTHY",
                    "message": "",
                    "replicas": [{"state": "STARTING"}],
                }
            },
        },
        "bad_app": {
            "name": "bad_app",
            "route_prefix": None,
            "status": "DEPLOY_FAILED",
            "message": "ModuleNotFoundError: No module named 'no_such_module'",
            "deployments": {},
        },
    },
    "target_capacity": None,
}


@pytest.fixture
async def factory():
    f = DashboardClientFactory(timeout=0.5)
    yield f
    await f.close()


async def test_get_parses_statuses_and_asks_for_declarative_apps(http_server, factory) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response(RUNNING_DOC)

    server = await http_server(handler)
    details = await factory.client(server.url).get_serve_details()

    req = server.requests[0]
    assert req.method == "GET"
    assert req.path == "/api/serve/applications/"
    assert req.query["api_type"] == "declarative"
    assert "x-ray-authorization" not in req.headers
    assert details.applications["fruit_app"].status == "RUNNING"
    assert details.applications["fruit_app"].deployments["Fruit"].status == "HEALTHY"
    assert details.applications["bad_app"].status == "DEPLOY_FAILED"
    assert "no_such_module" in details.applications["bad_app"].message
    assert details.http_port == 9000
    assert not details.all_running


async def test_empty_serve_document_is_not_ready(http_server, factory) -> None:
    async def handler(request: web.Request) -> web.Response:
        doc = {"controller_info": {}, "proxies": {}, "applications": {}, "target_capacity": None}
        return web.json_response(doc)

    server = await http_server(handler)
    details = await factory.client(server.url).get_serve_details()
    assert details.applications == {}
    assert not details.all_running


async def test_put_sends_json_config_with_auth_header(http_server, factory) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=200)  # Ray answers PUT with an empty 200

    server = await http_server(handler)
    config = {"applications": [{"name": "a", "import_path": "fruit:app", "route_prefix": "/a"}]}
    await factory.client(server.url + "/", auth_token="s3cret").put_serve_applications(config)

    req = server.requests[0]
    assert req.method == "PUT"
    assert req.path == "/api/serve/applications/"
    assert req.headers["Content-Type"] == "application/json"
    assert req.headers["x-ray-authorization"] == "Bearer s3cret"
    assert json.loads(server.bodies[0]) == config


async def test_schema_error_is_typed_with_ray_text_body(http_server, factory) -> None:
    text = "1 validation error for ServeDeploySchema\napplications\n  Field required [type=missing]"

    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=400, text=text)

    server = await http_server(handler)
    with pytest.raises(DashboardHTTPError) as info:
        await factory.client(server.url).put_serve_applications({})
    assert info.value.status == 400
    assert info.value.body == text
    assert "Field required" in str(info.value)


async def test_server_error_is_typed(http_server, factory) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=500, text="Traceback ...\njson.decoder.JSONDecodeError: Expecting value")

    server = await http_server(handler)
    with pytest.raises(DashboardHTTPError) as info:
        await factory.client(server.url).get_serve_details()
    assert info.value.status == 500


async def test_hanging_dashboard_times_out_without_blocking_other_dashboards(http_server, factory) -> None:
    hanging = await http_server(lambda r: hanging.hang(r))

    async def ok(request: web.Request) -> web.Response:
        return web.json_response(RUNNING_DOC)

    healthy = await http_server(ok)
    stuck = asyncio.create_task(factory.client(hanging.url).get_serve_details())
    details = await factory.client(healthy.url).get_serve_details()
    assert details.applications["fruit_app"].status == "RUNNING"
    assert not stuck.done()  # the other call finished while this one still waits
    with pytest.raises(DashboardTimeout):
        await stuck


async def test_connection_refused_is_unreachable(factory, refused_port) -> None:
    with pytest.raises(DashboardUnreachable):
        await factory.client(f"http://127.0.0.1:{refused_port}").get_serve_details()


@pytest.mark.parametrize("chunked", [False, True])
async def test_oversized_body_is_refused(http_server, chunked: bool) -> None:
    big = json.dumps({"applications": {}, "pad": "x" * 5000}).encode()

    async def handler(request: web.Request) -> web.StreamResponse:
        if not chunked:
            return web.Response(body=big, content_type="application/json")
        resp = web.StreamResponse()
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        for i in range(0, len(big), 1000):
            await resp.write(big[i : i + 1000])
        await resp.write_eof()
        return resp

    server = await http_server(handler)
    factory = DashboardClientFactory(max_body_bytes=1024)
    try:
        with pytest.raises(DashboardResponseTooLarge):
            await factory.client(server.url).get_serve_details()
    finally:
        await factory.close()


@pytest.mark.parametrize(
    "body",
    [b"not json", b'{"applications": []}', b'{"applications": {"a": {"status": 3}}}'],
)
async def test_unexpected_document_is_invalid_response(http_server, factory, body: bytes) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    server = await http_server(handler)
    with pytest.raises(DashboardInvalidResponse):
        await factory.client(server.url).get_serve_details()


async def test_connections_are_pooled_between_calls(http_server, factory) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response(RUNNING_DOC)

    server = await http_server(handler)
    for _ in range(3):
        await factory.client(server.url).get_serve_details()
    assert len(server.requests) == 3
    assert len(set(server.peers)) == 1  # one kept-alive TCP connection served all three


class _UnclosedSessions:
    """Collects aiohttp's "Unclosed client session" reports (sent to the loop's exception handler)."""

    def __init__(self) -> None:
        self.reports: list[str] = []

    def __enter__(self) -> _UnclosedSessions:
        self._loop = asyncio.get_running_loop()
        self._previous = self._loop.get_exception_handler()
        self._loop.set_exception_handler(lambda loop, ctx: self.reports.append(str(ctx.get("message"))))
        return self

    def __exit__(self, *exc: object) -> None:
        gc.collect()  # aiohttp reports an unclosed session from ClientSession.__del__
        self._loop.set_exception_handler(self._previous)


async def test_a_closed_factory_refuses_new_clients_and_leaks_no_session(http_server) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response(RUNNING_DOC)

    server = await http_server(handler)
    with _UnclosedSessions() as unclosed:
        factory = DashboardClientFactory()
        early = factory.client(server.url)  # made before shutdown, as a reconcile in flight would
        await early.get_serve_details()
        await factory.close()
        assert factory.closed

        # A reconcile still draining asks for a client: refused without I/O, no new pool opened.
        with pytest.raises(DashboardClosed, match="closed") as caught:
            factory.client(server.url)
        assert isinstance(caught.value, DashboardError)  # callers treat it like any dashboard failure
        # A client it already held fails the same typed way, not with aiohttp's bare RuntimeError.
        with pytest.raises(DashboardClosed):
            await early.put_serve_applications({"applications": []})
        assert factory._session is None
        assert len(server.requests) == 1
        del early, factory
    assert not [r for r in unclosed.reports if "Unclosed" in r]


async def test_close_during_a_request_fails_it_as_a_dashboard_error(http_server, wait_until) -> None:
    server = await http_server(lambda request: server.hang(request))
    factory = DashboardClientFactory(timeout=5.0)
    with _UnclosedSessions() as unclosed:
        pending = asyncio.ensure_future(factory.client(server.url).get_serve_details())
        await wait_until(lambda: server.active == 1)
        await factory.close()
        with pytest.raises(DashboardError):
            await pending
        with pytest.raises(DashboardClosed):
            factory.client(server.url)
        del pending, factory
    assert not [r for r in unclosed.reports if "Unclosed" in r]
