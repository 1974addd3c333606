"""Watch streams: replay from a resourceVersion, then live events, bookmarks and timeouts.

Semantics from the API concepts page: no ``resourceVersion`` (or ``"0"``) starts with synthetic
ADDED events for the current state; ``N`` replays retained events newer than ``N``, or sends an
``ERROR`` event with a 410 ``Expired`` Status when ``N`` is older than the retained window (the
HTTP status stays 200, exactly like kube-apiserver). Registration and replay happen without an
``await`` in between, so no event can slip through the gap.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import orjson
from aiohttp import web

from .core import ApiCore
from .errors import StatusError
from .registry import ResourceType
from .store import Watcher

__all__ = ["WatchParams", "serve_watch"]


class WatchParams:
    def __init__(
        self,
        resource_version: str | None,
        timeout: float | None,
        bookmarks: bool,
        send_initial: bool | None,
        render: Callable[[dict[str, Any]], bytes] | None = None,
    ) -> None:
        self.render = render
        self.resource_version = resource_version
        self.timeout = timeout
        self.bookmarks = bookmarks
        self.send_initial = send_initial


def _error_line(err: StatusError) -> bytes:
    return b'{"type":"ERROR","object":' + orjson.dumps(err.body()) + b"}\n"


def _bookmark(rt: ResourceType, rv: int, initial_end: bool = False) -> bytes:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    return (
        orjson.dumps(
            {"type": "BOOKMARK", "object": {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta}}
        )
        + b"\n"
    )


def open_watcher(
    core: ApiCore,
    rt: ResourceType,
    namespace: str | None,
    matches: Callable[[dict[str, Any]], bool],
    params: WatchParams,
) -> tuple[Watcher, list[bytes]]:
    """Register the watcher and compute what it must see first; raises StatusError(410) if too old."""
    bucket = core.storage.bucket(rt.key)
    w = Watcher(namespace, matches, rt.api_version)
    w.present = lambda obj: core.present(rt, obj)
    w.render = params.render
    first: list[bytes] = []
    rv_text = params.resource_version
    initial = params.send_initial if params.send_initial is not None else rv_text in (None, "", "0")
    if initial:
        for key in bucket.iter_namespace(namespace):
            obj = bucket.objects[key]
            if matches(obj):
                if params.render is not None:
                    raw = params.render(obj)
                elif obj.get("apiVersion") == rt.api_version:
                    raw = bucket.encoded(key)
                else:
                    raw = orjson.dumps(core.present(rt, obj))
                first.append(b'{"type":"ADDED","object":' + raw + b"}\n")
        if params.send_initial and params.bookmarks:
            first.append(_bookmark(rt, core.storage.rv, initial_end=True))
    elif rv_text not in (None, "", "0"):
        try:
            since = int(rv_text)
        except ValueError:
            raise StatusError.bad_request(f'invalid resource version: "{rv_text}"') from None
        if since < bucket.compacted_rv:
            raise StatusError.expired(f"too old resource version: {since} ({bucket.compacted_rv})")
        w.min_rv = since
        for ev in bucket.history:
            if ev.rv > since:
                w.offer(ev)
    bucket.watchers.add(w)
    return w, first


async def serve_watch(
    request: web.Request,
    core: ApiCore,
    rt: ResourceType,
    namespace: str | None,
    matches: Callable[[dict[str, Any]], bool],
    params: WatchParams,
    bookmark_interval: float,
    default_timeout: float,
) -> web.StreamResponse:
    expired: StatusError | None = None
    w: Watcher | None
    first: list[bytes]
    try:
        w, first = open_watcher(core, rt, namespace, matches, params)
    except StatusError as e:
        if e.code != 410:
            raise
        expired, w, first = e, None, []
    resp = web.StreamResponse(
        status=200, headers={"Content-Type": "application/json", "Cache-Control": "no-cache, private"}
    )
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    if expired is not None:
        await resp.write(_error_line(expired))
        await resp.write_eof()
        return resp
    assert w is not None
    bucket = core.storage.bucket(rt.key)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + (params.timeout if params.timeout is not None else default_timeout)
    try:
        if first:
            await resp.write(b"".join(first))
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            wait = min(remaining, bookmark_interval) if params.bookmarks else remaining
            try:
                item = await asyncio.wait_for(w.queue.get(), wait)
            except TimeoutError:
                if params.bookmarks and loop.time() < deadline and w.queue.empty():
                    await resp.write(_bookmark(rt, core.storage.rv))
                continue
            chunk: list[bytes] = []
            done = False
            while item is not None:
                chunk.append(item)
                if w.queue.empty():
                    break
                item = w.queue.get_nowait()
            if item is None:
                done = True
            if chunk:
                await resp.write(b"".join(chunk))
            if done:
                if w.expire_message is not None:
                    await resp.write(_error_line(StatusError.expired(w.expire_message)))
                elif w.cut:
                    # Drop the connection without the terminating chunk: the client sees a broken stream.
                    if request.transport is not None:
                        request.transport.close()
                    return resp
                break
    except (ConnectionResetError, asyncio.CancelledError):
        bucket.watchers.discard(w)
        w.closed = True
        raise
    finally:
        bucket.watchers.discard(w)
        w.closed = True
    with contextlib.suppress(ConnectionResetError):
        await resp.write_eof()
    return resp
