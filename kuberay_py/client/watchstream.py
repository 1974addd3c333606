"""Decoding a watch response: newline-delimited JSON events, validated one line at a time.

The API server writes each watch event with Go's ``json.Encoder``, which ends every event with a
newline, so a watch body is JSON Lines. We split on newlines ourselves (aiohttp's ``readline`` has
a 128 KiB line cap, and one large custom resource can exceed it) and decode each line with orjson.
Anything that is not a well-formed event (a proxy's HTML error page, a truncated line, a JSON value
without ``type``/``object``) raises :class:`~kuberay_py.client.errors.TransportError` with a short
sample of what arrived, so the reflector can log it clearly, back off and re-watch instead of
feeding a broken object into the cache.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import orjson

from kuberay_py.client.errors import TransportError, error_from_status

__all__ = ["EVENT_TYPES", "MAX_EVENT_BYTES", "decode_event", "iter_lines"]

EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"})
MAX_EVENT_BYTES = 64 * 1024 * 1024  # well above etcd's 1.5 MiB object limit, below "runaway"


def _sample(raw: bytes) -> str:
    return raw[:120].decode("utf-8", "replace")


async def iter_lines(chunks: AsyncIterable[bytes], max_line: int = MAX_EVENT_BYTES) -> AsyncIterator[bytes]:
    """Yield complete non-empty lines; a trailing fragment without newline is yielded at EOF."""
    buf = bytearray()
    async for chunk in chunks:
        buf += chunk
        start = 0
        while (end := buf.find(b"\n", start)) >= 0:
            if end > start:
                line = bytes(buf[start:end])
                if line.strip():
                    yield line
            start = end + 1
        if start:
            del buf[:start]
        if len(buf) > max_line:
            raise TransportError(
                f"watch event larger than {max_line} bytes without a newline", "GarbageStream"
            )
    if buf.strip():
        yield bytes(buf)


def decode_event(line: bytes) -> dict[str, Any]:
    """One watch event ``{"type", "object"}``; ``ERROR`` events raise the typed API error they carry."""
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        raise TransportError(f"undecodable watch event ({e}): {_sample(line)!r}", "GarbageStream") from e
    if not isinstance(event, dict):
        raise TransportError(f"watch event is not an object: {_sample(line)!r}", "GarbageStream")
    etype = event.get("type")
    obj = event.get("object")
    if etype not in EVENT_TYPES or not isinstance(obj, dict):
        raise TransportError(f"malformed watch event: {_sample(line)!r}", "GarbageStream")
    if etype == "ERROR":
        code = obj.get("code")
        raise error_from_status(code if isinstance(code, int) and code >= 400 else 500, obj)
    if etype != "BOOKMARK":
        metadata = obj.get("metadata")
        if not isinstance(metadata, dict) or not metadata.get("name"):
            raise TransportError(
                f"watch event object has no metadata.name: {_sample(line)!r}", "GarbageStream"
            )
    return event
