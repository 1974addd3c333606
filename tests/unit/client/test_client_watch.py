"""Watch streams: events line by line, 410 as HTTP or ERROR event, 403, garbage, cut streams."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
import pytest
from aiohttp import web

from kuberay_py.client import Client, Forbidden, Gone, TransportError, resources
from kuberay_py.client.watchstream import iter_lines

from .conftest import Stub, status


def ev(etype: str, name: str, rv: str) -> bytes:
    obj = {"kind": "Pod", "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}}
    return orjson.dumps({"type": etype, "object": obj}) + b"\n"


def streaming(chunks: Sequence[bytes], *, cut: bool = False) -> Any:
    """A handler that streams ``chunks`` (one write each) and then ends or drops the connection."""

    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        for chunk in chunks:
            await resp.write(chunk)
        if cut:
            assert request.transport is not None
            request.transport.close()
            return resp
        await resp.write_eof()
        return resp

    return handler


async def collect(client: Client, **kw: Any) -> list[dict[str, Any]]:
    return [e async for e in client.watch(resources.PODS, "ns", resource_version="1", **kw)]


async def test_events_split_across_chunks_are_reassembled(stub: Stub, client: Client) -> None:
    data = ev("ADDED", "a", "2") + ev("MODIFIED", "a", "3") + ev("DELETED", "a", "4")
    # Split mid-event and put two events in one chunk.
    stub.handler = streaming([data[:17], data[17:90], data[90:]])
    events = await collect(client)
    assert [(e["type"], e["object"]["metadata"]["resourceVersion"]) for e in events] == [
        ("ADDED", "2"),
        ("MODIFIED", "3"),
        ("DELETED", "4"),
    ]


async def test_bookmarks_are_passed_through(stub: Stub, client: Client) -> None:
    bookmark = orjson.dumps(
        {"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "9"}}}
    )
    stub.handler = streaming([ev("ADDED", "a", "2"), bookmark + b"\n"])
    events = await collect(client)
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]


async def test_http_410_raises_gone(stub: Stub, client: Client) -> None:
    stub.reply(410, status(410, "Expired", "too old resource version: 1 (50)"))
    with pytest.raises(Gone, match="too old"):
        await collect(client)


async def test_error_event_410_raises_gone_after_earlier_events(stub: Stub, client: Client) -> None:
    err = orjson.dumps({"type": "ERROR", "object": status(410, "Expired", "too old resource version")})
    stub.handler = streaming([ev("ADDED", "a", "2"), err + b"\n", ev("ADDED", "b", "3")])
    seen: list[str] = []
    with pytest.raises(Gone):
        async for e in client.watch(resources.PODS, "ns", resource_version="1"):
            seen.append(e["object"]["metadata"]["name"])
    assert seen == ["a"]


async def test_http_403_raises_forbidden(stub: Stub, client: Client) -> None:
    stub.reply(403, status(403, "Forbidden", 'pods is forbidden: User "x" cannot watch resource "pods"'))
    with pytest.raises(Forbidden, match="cannot watch"):
        await collect(client)


@pytest.mark.parametrize(
    "garbage",
    [b"<html>proxy error</html>\n", b'{"type": "ADDED"}\n', b"[1,2]\n", b'{"type":"NOPE","object":{}}\n'],
)
async def test_garbage_line_raises_transport_error(stub: Stub, client: Client, garbage: bytes) -> None:
    stub.handler = streaming([ev("ADDED", "a", "2"), garbage, ev("ADDED", "b", "3")])
    seen: list[str] = []
    with pytest.raises(TransportError) as info:
        async for e in client.watch(resources.PODS, "ns", resource_version="1"):
            seen.append(e["object"]["metadata"]["name"])
    assert seen == ["a"]
    assert info.value.reason == "GarbageStream"


async def test_stream_cut_mid_event_raises_transport_error(stub: Stub, client: Client) -> None:
    data = ev("ADDED", "a", "2") + ev("ADDED", "b", "3")
    stub.handler = streaming([data[:-20]], cut=True)
    seen: list[str] = []
    with pytest.raises(TransportError):
        async for e in client.watch(resources.PODS, "ns", resource_version="1"):
            seen.append(e["object"]["metadata"]["name"])
    assert seen == ["a"]


async def test_breaking_out_early_releases_the_connection(stub: Stub, client: Client) -> None:
    stub.handler = streaming([ev("ADDED", "a", "2"), ev("ADDED", "b", "3")])
    async for _ in client.watch(resources.PODS, "ns"):
        break
    stub.reply(200, {"kind": "Pod", "metadata": {"name": "x"}})
    assert (await client.get(resources.PODS, "x", "ns"))["metadata"]["name"] == "x"


async def test_iter_lines_skips_blank_lines_and_yields_the_tail() -> None:
    async def chunks() -> Any:
        for c in (b"a\n\n", b"  \nb", b"c\nd"):
            yield c

    assert [line async for line in iter_lines(chunks())] == [b"a", b"bc", b"d"]


async def test_iter_lines_caps_runaway_lines() -> None:
    async def chunks() -> Any:
        for _ in range(10):
            yield b"x" * 100

    with pytest.raises(TransportError, match="larger than"):
        [line async for line in iter_lines(chunks(), max_line=500)]
