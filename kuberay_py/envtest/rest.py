"""Raw JSON requests through a kubernetes_asyncio ``ApiClient``.

The environment needs a handful of calls (install CRDs, create namespaces) before
``kuberay_py.client`` is in play, in both built-in and real mode (TLS client certificates).
kubernetes_asyncio's ``ApiClient`` already knows how to authenticate from a kubeconfig; its
generated models are skipped (plain dicts, as everywhere else).

Not every answer is JSON: until a group/version is served, kube-apiserver answers
``GET /apis/<group>/<version>`` with a plain-text ``404 page not found``, and while it starts it
may answer 503 with a text body. Such answers are errors with their status code, never a decode
crash.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
from aiohttp import ClientError
from kubernetes_asyncio.client import ApiClient

__all__ = [
    "RETRIABLE_STATUSES",
    "RestError",
    "create_or_replace",
    "decode_body",
    "request_json",
    "request_until",
]

# Answers a starting or busy kube-apiserver gives that mean "try again", not "no".
RETRIABLE_STATUSES = frozenset({429, 503, 504})


class RestError(Exception):
    def __init__(self, status: int, body: Any) -> None:
        reason = str(body.get("reason", "")) if isinstance(body, dict) else f"HTTP{status}"
        message = str(body.get("message", "")) if isinstance(body, dict) else str(body or "")
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body

    @property
    def retriable(self) -> bool:
        return self.status in RETRIABLE_STATUSES


def decode_body(data: bytes) -> Any:
    """The JSON document in ``data``; a body that is not JSON comes back as (the start of) its text."""
    if not data:
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return data[:500].decode("utf-8", "replace").strip()


async def request_json(
    api: ApiClient,
    method: str,
    path: str,
    body: Any = None,
    query: dict[str, str] | None = None,
    content_type: str = "application/json",
) -> Any:
    """Send one request; return the decoded JSON body or raise :class:`RestError`.

    Raises for a non-2xx answer, for a 2xx answer that is not JSON (status kept, body as text)
    and for a connection that broke (status 0), so callers handle one exception type.
    """
    try:
        resp = await api.call_api(
            path,
            method,
            query_params=list((query or {}).items()),
            header_params={"Accept": "application/json", "Content-Type": content_type},
            body=body,
            auth_settings=["BearerToken"],
            _preload_content=False,
        )
        try:
            data = await resp.read()
        finally:
            resp.release()
    except (ClientError, OSError, TimeoutError) as e:
        raise RestError(0, f"{method} {path}: {e}") from e
    decoded = decode_body(data)
    if resp.status >= 300:
        raise RestError(resp.status, decoded)
    if isinstance(decoded, str):
        raise RestError(resp.status, f"{method} {path}: response is not JSON: {decoded[:120]!r}")
    return decoded


async def request_until(api: ApiClient, deadline: float, method: str, path: str, body: Any = None) -> Any:
    """One request, repeated while a starting kube-apiserver answers 429/503/504 (until ``deadline``,
    on the loop's clock)."""
    loop = asyncio.get_running_loop()
    while True:
        try:
            return await request_json(api, method, path, body)
        except RestError as e:
            if not e.retriable or loop.time() > deadline:
                raise
        await asyncio.sleep(0.1)


async def create_or_replace(api: ApiClient, collection: str, doc: dict[str, Any], deadline: float) -> Any:
    """Create ``doc`` under ``collection``, or replace the object of that name (installing into a
    cluster that already has it: an earlier run, an existing cluster)."""
    try:
        return await request_until(api, deadline, "POST", collection, doc)
    except RestError as e:
        if e.status != 409:
            raise
    path = f"{collection}/{doc['metadata']['name']}"
    current = await request_until(api, deadline, "GET", path)
    version = current["metadata"]["resourceVersion"]
    replacement = {**doc, "metadata": {**doc["metadata"], "resourceVersion": version}}
    return await request_until(api, deadline, "PUT", path, replacement)
