"""Raw JSON requests through a kubernetes_asyncio ``ApiClient``.

The environment needs a handful of calls (install CRDs, create namespaces) before
``kuberay_py.client`` is in play, in both built-in and real mode (TLS client certificates).
kubernetes_asyncio's ``ApiClient`` already knows how to authenticate from a kubeconfig; its
generated models are skipped (plain dicts, as everywhere else).
"""

from __future__ import annotations

from typing import Any

import orjson
from kubernetes_asyncio.client import ApiClient

__all__ = ["RestError", "request_json"]


class RestError(Exception):
    def __init__(self, status: int, body: Any) -> None:
        reason = body.get("reason", "") if isinstance(body, dict) else ""
        message = body.get("message", "") if isinstance(body, dict) else str(body)
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.body = body


async def request_json(
    api: ApiClient,
    method: str,
    path: str,
    body: Any = None,
    query: dict[str, str] | None = None,
    content_type: str = "application/json",
) -> Any:
    """Send one request; return the decoded JSON body or raise :class:`RestError` on non-2xx."""
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
    decoded = orjson.loads(data) if data else None
    if resp.status >= 300:
        raise RestError(resp.status, decoded)
    return decoded
