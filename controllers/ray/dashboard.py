"""Async client for the Ray dashboard's Serve REST API.

Why it looks like this: KubeRay #1910 cut the dashboard timeout from 2 minutes to 2 s because one
crashed dashboard blocked the whole operator. Here every call has a hard total timeout (2 s by
default), a cap on how much of the response body is read, and a typed error, so a reconcile that
talks to a hanging or broken dashboard fails fast with a precise reason and never holds a worker.
All clients made by one :class:`DashboardClientFactory` share one aiohttp session, so connections
to a head are pooled and kept alive between reconciles instead of re-handshaking every time.

Example::

    factory = DashboardClientFactory()
    dash = factory.client("http://10.0.0.5:8265", auth_token=None)
    await dash.put_serve_applications({"applications": [...]})
    details = await dash.get_serve_details()
    await factory.close()

With ``kubernetes_proxy`` (KubeRay's ``--use-kubernetes-proxy``) the factory speaks to the API
server instead: the base URLs are the head Service's ``services/proxy`` subresource
(:func:`controllers.common.heads.dashboard_url`), requests carry the operator's API credentials
and TLS settings, and the timeout is KubeRay's 10 s for proxied traffic (two hops, and the API
server dials the endpoint itself). For operators that cannot reach the Pod network.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import aiohttp
import orjson

from controllers.ray.serve_status import ServeDetails, parse_serve_details
from kuberay_py.client import ClientConfig

__all__ = [
    "DEFAULT_DASHBOARD_MAX_BODY",
    "DEFAULT_DASHBOARD_TIMEOUT",
    "PROXIED_DASHBOARD_TIMEOUT",
    "SERVE_APPLICATIONS_PATH",
    "DashboardClient",
    "DashboardClientFactory",
    "DashboardClosed",
    "DashboardError",
    "DashboardHTTPError",
    "DashboardInvalidResponse",
    "DashboardResponseTooLarge",
    "DashboardTimeout",
    "DashboardUnreachable",
    "read_capped",
]

DEFAULT_DASHBOARD_TIMEOUT = 2.0
# KubeRay's RayHTTPClientProxyTimeoutSeconds: through the API server a request takes two hops.
PROXIED_DASHBOARD_TIMEOUT = 10.0
# A GET of a few dozen applications with full deployment configs and replica lists stays well under
# a megabyte; 8 MiB leaves room for big deployments while bounding what one head can make us buffer.
DEFAULT_DASHBOARD_MAX_BODY = 8 * 1024 * 1024
SERVE_APPLICATIONS_PATH = "/api/serve/applications/"
AUTH_HEADER = "x-ray-authorization"

ApiCredentials = Callable[[], Awaitable[str | None]]


class DashboardError(Exception):
    """Any failure talking to a Ray dashboard; ``url`` says which one."""

    def __init__(self, message: str, url: str) -> None:
        super().__init__(f"{message} ({url})")
        self.url = url
        self.detail = message


class DashboardClosed(DashboardError):
    """The factory was closed (the operator is shutting down): no connection is opened any more.

    A :class:`DashboardError` like the others, so a reconcile that meets it mid-shutdown treats it
    as a transient failure (it would be retried, were the queue not shutting down) instead of
    reopening a connection pool that nothing would close — aiohttp's "Unclosed client session".
    """


class DashboardTimeout(DashboardError):
    """The dashboard did not answer within the timeout (hanging head, overloaded dashboard)."""


class DashboardUnreachable(DashboardError):
    """No HTTP exchange happened: connection refused or reset, DNS failure, broken transport."""


class DashboardHTTPError(DashboardError):
    """The dashboard answered with a non-2xx status; ``body`` is its (capped) text.

    Ray answers a config that fails schema validation with 400 and pydantic's plain-text message,
    and malformed JSON with 500 and a traceback, so ``body`` is kept as text, never parsed.
    """

    def __init__(self, status: int, body: str, url: str) -> None:
        super().__init__(f"HTTP {status}: {body.strip()[:2000]}", url)
        self.status = status
        self.body = body


class DashboardResponseTooLarge(DashboardError):
    """The response body exceeded the configured cap; it was not buffered."""


class DashboardInvalidResponse(DashboardError):
    """A 2xx answer whose body is not the JSON document Ray's API returns."""


async def read_capped(response: aiohttp.ClientResponse, limit: int) -> tuple[bytes, bool]:
    """Read at most ``limit`` bytes of the body; the flag says whether more was left unread."""
    declared = response.content_length
    if declared is not None and declared > limit:
        return b"", True
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = await response.content.read(limit + 1 - size)
        if not chunk:
            return b"".join(chunks), False
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)[:limit], True


class DashboardClient:
    """One dashboard (one Ray head). Cheap to create; the session belongs to the factory."""

    def __init__(
        self,
        base_url: str,
        session: aiohttp.ClientSession,
        *,
        auth_token: str | None = None,
        timeout: float = DEFAULT_DASHBOARD_TIMEOUT,
        max_body_bytes: int = DEFAULT_DASHBOARD_MAX_BODY,
        api_credentials: ApiCredentials | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._session = session
        # Ray's token rides in its own header, so it passes the API server's proxy, which takes
        # ``Authorization`` (``api_credentials``) for itself and strips it before forwarding.
        self._headers = {AUTH_HEADER: f"Bearer {auth_token}"} if auth_token else {}
        self._api_credentials = api_credentials
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._max_body = max_body_bytes

    async def get_serve_details(self) -> ServeDetails:
        """``GET /api/serve/applications/?api_type=declarative`` parsed into statuses."""
        url = f"{self.base_url}{SERVE_APPLICATIONS_PATH}"
        body = await self.request("GET", url, params={"api_type": "declarative"})
        try:
            return parse_serve_details(orjson.loads(body))
        except (orjson.JSONDecodeError, ValueError) as exc:
            raise DashboardInvalidResponse(f"unexpected serve applications document: {exc}", url) from exc

    async def put_serve_applications(self, config: Mapping[str, Any]) -> None:
        """``PUT /api/serve/applications/`` with the whole declarative config (Ray: 200, empty body)."""
        url = f"{self.base_url}{SERVE_APPLICATIONS_PATH}"
        await self.request("PUT", url, data=orjson.dumps(dict(config)))

    async def request(
        self, method: str, url: str, *, params: Mapping[str, str] | None = None, data: bytes | None = None
    ) -> bytes:
        """One call with this client's timeout, body cap and auth header; the (capped) 2xx body.

        Public so the other dashboard APIs (``controllers.ray.jobs``) share this error mapping.
        """
        if self._session.closed:
            # aiohttp would raise a bare RuntimeError("Session is closed"), which no caller expects.
            raise DashboardClosed("dashboard client factory is closed (operator shutting down)", url)
        headers = dict(self._headers)
        if self._api_credentials is not None:
            credential = await self._api_credentials()
            if credential:
                headers["Authorization"] = credential
        if data is not None:
            headers["Content-Type"] = "application/json"
        try:
            async with self._session.request(
                method, url, params=params, data=data, headers=headers, timeout=self._timeout
            ) as resp:
                body, truncated = await read_capped(resp, self._max_body)
                if resp.status < 200 or resp.status >= 300:
                    raise DashboardHTTPError(resp.status, body.decode("utf-8", errors="replace"), url)
                if truncated:
                    raise DashboardResponseTooLarge(f"response body larger than {self._max_body} bytes", url)
                return body
        except DashboardError:
            raise
        except TimeoutError as exc:
            raise DashboardTimeout(f"no answer within {self._timeout.total} s", url) from exc
        except aiohttp.ClientResponseError as exc:  # malformed status line or headers
            raise DashboardInvalidResponse(f"malformed HTTP response: {exc.message}", url) from exc
        except (aiohttp.ClientError, OSError, asyncio.IncompleteReadError) as exc:
            raise DashboardUnreachable(f"{type(exc).__name__}: {exc}", url) from exc


class DashboardClientFactory:
    """Hands out :class:`DashboardClient` objects over one pooled aiohttp session.

    The session is created lazily on the running loop (aiohttp sessions are loop-bound) and closed
    by :meth:`close`, which the operator calls on shutdown. Closing is final: a reconcile still
    draining at shutdown may ask for a client afterwards, and reopening the pool then would leak
    it, so a closed factory raises :class:`DashboardClosed` instead (without any I/O).
    """

    def __init__(
        self,
        *,
        timeout: float | None = None,
        max_body_bytes: int = DEFAULT_DASHBOARD_MAX_BODY,
        max_connections: int = 100,
        max_connections_per_host: int = 4,
        kubernetes_proxy: ClientConfig | None = None,
    ) -> None:
        """``kubernetes_proxy``: the API server to proxy through (None: dial heads directly).

        ``timeout`` defaults to 2 s direct, 10 s proxied (KubeRay's two constants).
        """
        self.kubernetes_proxy = kubernetes_proxy
        if timeout is None:
            timeout = DEFAULT_DASHBOARD_TIMEOUT if kubernetes_proxy is None else PROXIED_DASHBOARD_TIMEOUT
        self.timeout = timeout
        self.max_body_bytes = max_body_bytes
        self._limit = max_connections
        self._limit_per_host = max_connections_per_host
        self._session: aiohttp.ClientSession | None = None
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def _get_session(self, base_url: str) -> aiohttp.ClientSession:
        if self._closed:
            raise DashboardClosed("dashboard client factory is closed (operator shutting down)", base_url)
        if self._session is None or self._session.closed:
            proxy = self.kubernetes_proxy
            # Through the API server every dashboard shares one host: the per-host cap is the total.
            per_host = self._limit if proxy is not None else self._limit_per_host
            ssl: Any = proxy.ssl_context if proxy is not None and proxy.ssl_context is not None else True
            connector = aiohttp.TCPConnector(
                limit=self._limit, limit_per_host=per_host, keepalive_timeout=30.0, ssl=ssl
            )
            # Trust nothing from the environment: dashboards are addressed directly, never via a proxy.
            self._session = aiohttp.ClientSession(connector=connector, trust_env=False)
        return self._session

    @property
    def proxy_host(self) -> str | None:
        """The API server's base URL when dashboards are reached through it, else None."""
        return None if self.kubernetes_proxy is None else self.kubernetes_proxy.host.rstrip("/")

    async def _api_credentials(self) -> str | None:
        proxy = self.kubernetes_proxy
        if proxy is None:
            return None
        if proxy.token_source is not None:
            return await proxy.token_source() or proxy.token
        return proxy.token

    def client(self, base_url: str, *, auth_token: str | None = None) -> DashboardClient:
        return DashboardClient(
            base_url,
            self._get_session(base_url),
            auth_token=auth_token,
            timeout=self.timeout,
            max_body_bytes=self.max_body_bytes,
            api_credentials=self._api_credentials if self.kubernetes_proxy is not None else None,
        )

    async def close(self) -> None:
        """Close the pool for good; later :meth:`client` calls and requests raise DashboardClosed."""
        self._closed = True  # before the await: nothing may open a new session meanwhile
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()
