"""The client's HTTP/1.1 transport against servers that misbehave the ways real networks do.

Each server here is a raw asyncio socket server, so a test controls every byte: a keep-alive
connection the server drops with a request in flight, a response that never comes, bytes that are
not HTTP, a watch event larger than the read buffer, and an HTTP CONNECT proxy in front of TLS.
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import orjson
import pytest
import uvloop

from kuberay_py.client import Client, ClientConfig, TransportError, resources
from kuberay_py.client.http1 import request_target

Serve = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "ns"}}


@asynccontextmanager
async def raw_server(serve: Serve, ssl_context: ssl.SSLContext | None = None) -> AsyncIterator[int]:
    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=ssl_context)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


async def read_request(reader: asyncio.StreamReader) -> tuple[str, bytes] | None:
    """The request line and body of the next request, None when the client closed."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    lines = head.decode("latin-1").split("\r\n")
    length = next(
        (int(v) for k, _, v in (x.partition(": ") for x in lines) if k.lower() == "content-length"), 0
    )
    body = await reader.readexactly(length) if length else b""
    return lines[0], body


def json_response(obj: object, status: str = "200 OK") -> bytes:
    body = orjson.dumps(obj)
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


def config(port: int, **kw: object) -> ClientConfig:
    return ClientConfig(host=f"http://127.0.0.1:{port}", **kw)  # type: ignore[arg-type]


async def test_requests_share_one_keep_alive_connection() -> None:
    connections: list[list[str]] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen: list[str] = []
        connections.append(seen)
        while (req := await read_request(reader)) is not None:
            seen.append(req[0])
            writer.write(json_response(POD))
        writer.close()

    async with raw_server(serve) as port, Client(config(port)) as client:
        for _ in range(5):
            assert (await client.get(resources.PODS, "a", "ns"))["metadata"]["name"] == "a"
        assert client.open_connections == 1
    assert connections == [["GET /api/v1/namespaces/ns/pods/a HTTP/1.1"] * 5]


async def test_a_dropped_keep_alive_connection_repeats_a_get_but_not_a_create() -> None:
    """The server reads the second request of each connection and closes without a reply, the race
    between a server's idle close and a client's reuse: a GET is sent again on a fresh connection
    (it cannot have changed anything), a POST fails with a TransportError (it might have)."""
    seen: list[str] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        first = await read_request(reader)
        if first is None:
            return
        seen.append(first[0])
        writer.write(json_response(POD, "201 Created" if first[0].startswith("POST") else "200 OK"))
        second = await read_request(reader)
        if second is not None:
            seen.append("dropped " + second[0])
        writer.close()

    async with raw_server(serve) as port, Client(config(port)) as client:
        await client.get(resources.PODS, "a", "ns")
        assert (await client.get(resources.PODS, "a", "ns"))["kind"] == "Pod"
        with pytest.raises(TransportError, match="closed the connection"):
            await client.create(resources.PODS, POD, "ns")
    get = "GET /api/v1/namespaces/ns/pods/a HTTP/1.1"
    post = "POST /api/v1/namespaces/ns/pods HTTP/1.1"
    assert seen == [get, f"dropped {get}", get, f"dropped {post}"]


async def test_a_response_that_never_comes_is_a_transport_error_and_the_connection_is_not_reused() -> None:
    connections = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        req = await read_request(reader)
        if req is not None and req[0].startswith("GET /api/v1/namespaces/ns/pods/slow "):
            await reader.read()  # never answers; the client gives up and closes
        elif req is not None:
            writer.write(json_response(POD))
            await reader.read()
        writer.close()

    async with raw_server(serve) as port, Client(config(port, timeout=0.2)) as client:
        with pytest.raises(TransportError, match=r"no complete response within 0\.2 s"):
            await client.get(resources.PODS, "slow", "ns")
        assert client.open_connections == 0
        assert (await client.get(resources.PODS, "a", "ns"))["kind"] == "Pod"
    assert connections == 2


async def test_bytes_that_are_not_http_are_a_clear_transport_error() -> None:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
        await writer.drain()
        await reader.read()
        writer.close()

    async with raw_server(serve) as port, Client(config(port)) as client:
        with pytest.raises(TransportError, match="unparsable response"):
            await client.get(resources.PODS, "a", "ns")
        assert client.open_connections == 0


async def test_a_watch_event_larger_than_the_read_buffer_arrives_whole_between_small_ones() -> None:
    """A 5 MiB event (a RayCluster with a huge serve config, say) goes past the transport's
    high-water mark, so reading pauses and resumes while the consumer takes the earlier events."""
    big = {"metadata": {"name": "big", "resourceVersion": "2"}, "data": {"blob": "x" * (5 << 20)}}
    events = [
        {"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "1"}}},
        {"type": "ADDED", "object": big},
        {"type": "DELETED", "object": {"metadata": {"name": "a", "resourceVersion": "3"}}},
    ]

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        payload = b"".join(orjson.dumps(e) + b"\n" for e in events)
        for i in range(0, len(payload), 1 << 16):  # chunk boundaries fall inside events
            piece = payload[i : i + (1 << 16)]
            writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        await reader.read()
        writer.close()

    async with raw_server(serve) as port, Client(config(port)) as client:
        got = [e async for e in client.watch(resources.CONFIGMAPS, "ns", resource_version="1")]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in got] == [
        ("ADDED", "a"),
        ("ADDED", "big"),
        ("DELETED", "a"),
    ]
    assert got[1]["object"]["data"]["blob"] == big["data"]["blob"]


async def test_a_watch_that_goes_silent_ends_at_its_idle_deadline() -> None:
    """A half-open watch (the server, or something between, stops sending without closing) must
    not hang the reflector: the idle deadline ends it with a TransportError after the last bytes."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        event = orjson.dumps({"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "1"}}})
        line = event + b"\n"
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        writer.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
        await writer.drain()
        await reader.read()  # silent until the client gives up
        writer.close()

    got: list[str] = []
    async with raw_server(serve) as port, Client(config(port, watch_idle_timeout=0.3)) as client:
        with pytest.raises(TransportError, match=r"no bytes for 0\.3 s"):
            async for event in client.watch(resources.CONFIGMAPS, "ns"):
                got.append(event["object"]["metadata"]["name"])
        assert client.open_connections == 0
    assert got == ["a"]


async def test_https_through_an_http_connect_proxy_with_credentials(tls: dict[str, str]) -> None:
    """A kubeconfig's ``proxy-url``: the client asks the proxy for a tunnel, then speaks TLS to the
    API server inside it, so the proxy sees only the CONNECT line and its own credentials."""
    asked: list[tuple[str, str | None]] = []
    served: list[str] = []

    async def api_server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (req := await read_request(reader)) is not None:
            served.append(req[0])
            writer.write(json_response(POD))
        writer.close()

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        auth = next((v for k, _, v in (x.partition(": ") for x in head) if k == "Proxy-Authorization"), None)
        asked.append((head[0], auth))
        host, port = head[0].split(" ")[1].rsplit(":", 1)
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer), return_exceptions=True)

    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(tls["server_crt"], tls["server_key"])
    ca = ssl.create_default_context(cafile=tls["ca"])
    async with raw_server(api_server, server_tls) as api_port, raw_server(proxy) as proxy_port:
        cfg = ClientConfig(
            host=f"https://127.0.0.1:{api_port}",
            ssl_context=ca,
            proxy=f"http://us%40er:p%3Ass@127.0.0.1:{proxy_port}",
        )
        async with Client(cfg) as client:
            assert (await client.get(resources.PODS, "a", "ns"))["metadata"]["name"] == "a"
            assert (await client.get(resources.PODS, "a", "ns"))["metadata"]["name"] == "a"
    expected_auth = "Basic " + base64.b64encode(b"us@er:p:ss").decode()
    assert asked == [(f"CONNECT 127.0.0.1:{api_port} HTTP/1.1", expected_auth)]  # one tunnel, reused
    assert served == ["GET /api/v1/namespaces/ns/pods/a HTTP/1.1"] * 2  # both through it, in TLS


async def test_a_proxy_that_refuses_the_tunnel_is_named_in_the_error(
    tls_server: tuple[str, list[str | None]],
) -> None:
    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()

    url, _ = tls_server
    async with raw_server(proxy) as proxy_port:
        cfg = ClientConfig(host=url, proxy=f"http://127.0.0.1:{proxy_port}")
        async with Client(cfg) as client:
            with pytest.raises(TransportError, match=r"refused CONNECT: HTTP/1\.1 407"):
                await client.get(resources.PODS, "a", "ns")


@pytest.mark.parametrize(
    "scenario",
    [
        test_requests_share_one_keep_alive_connection,
        test_a_dropped_keep_alive_connection_repeats_a_get_but_not_a_create,
        test_bytes_that_are_not_http_are_a_clear_transport_error,
        test_a_watch_event_larger_than_the_read_buffer_arrives_whole_between_small_ones,
        test_a_watch_that_goes_silent_ends_at_its_idle_deadline,
        test_https_through_an_http_connect_proxy_with_credentials,
    ],
    ids=lambda f: f.__name__.removeprefix("test_"),
)
def test_the_same_on_uvloop(scenario: Callable[..., Awaitable[None]], tls: dict[str, str]) -> None:
    """The operator runs on uvloop (``--event-loop``), whose TLS and transports are its own."""
    wants_tls = "tls" in inspect.signature(scenario).parameters
    uvloop.run(scenario(tls) if wants_tls else scenario())


def test_the_request_target_is_percent_encoded_as_go_encodes_it() -> None:
    target = request_target(
        "/k8s/clusters/c-1",
        "/api/v1/namespaces/ns/pods",
        [("labelSelector", "ray.io/node-type in (worker),app!=x"), ("limit", "5")],
    )
    assert target == (
        "/k8s/clusters/c-1/api/v1/namespaces/ns/pods"
        "?labelSelector=ray.io%2Fnode-type+in+%28worker%29%2Capp%21%3Dx&limit=5"
    )
    # a query written into the path (as a raw request gives it) stays as written, then ``query``
    assert request_target("", "/api/v1/pods?labelSelector=a%20in%20b", [("limit", "1")]) == (
        "/api/v1/pods?labelSelector=a%20in%20b&limit=1"
    )
    assert request_target("", "/api/v1/namespaces/ns/pods/a b") == "/api/v1/namespaces/ns/pods/a%20b"
