"""The async API client: raw JSON over keep-alive HTTP/1.1 connections, throttled, with typed errors.

Why not kubernetes_asyncio's generated ``*Api`` classes: its 36.1.0 REST layer does not raise on
HTTP errors when streaming, retries a 410 watch with the same stale resourceVersion, sends query
booleans as ``True`` and defaults custom-object patches to JSON patch; and its models cost ~50x
``orjson.loads`` per object. So only its configuration loaders are used (see ``config.py``); the
wire is ours (``http1.py``: httptools-parsed HTTP/1.1, because aiohttp's client machinery cost a
third more CPU per write, and under a 100m quota an operator's CPU is its pace) and every rule the
API server cares about is explicit here:

* ``Accept: application/json`` on every request, ``Content-Type`` chosen per patch type;
* query booleans as ``true``/``false``;
* every call has a deadline (``ClientConfig.timeout``); a watch instead has an idle deadline
  (no bytes for ``timeoutSeconds + 30 s``) because its total length is unbounded;
* a QPS/burst token bucket in front of every request, including the opening of a watch;
* 429 (and 5xx carrying ``Retry-After``) is retried after the server's ``Retry-After``, at most
  ``ClientConfig.max_retries`` times, as client-go does; then :class:`TooManyRequests` is raised;
* ``rest_client_*`` metrics per request.
"""

from __future__ import annotations

import builtins
import functools
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, TypedDict, Unpack
from urllib.parse import urlsplit

import orjson

from kuberay_py.client import metrics
from kuberay_py.client.config import ClientConfig
from kuberay_py.client.errors import Gone, NotFound, TransportError, error_from_response
from kuberay_py.client.http1 import Origin, Pool, header_line, request_target
from kuberay_py.client.ratelimit import TokenBucket
from kuberay_py.client.resources import Resource
from kuberay_py.client.watchstream import decode_event, iter_lines
from kuberay_py.clock import Clock, RealClock
from kuberay_py.log import get_logger

__all__ = ["PATCH_CONTENT_TYPES", "Client", "ListQuery", "PatchType", "RequestObserver", "encode_query"]

log = get_logger("kuberay_py.client")

PatchType = Literal["merge", "json", "strategic", "apply"]

PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",  # the body is JSON, which is valid YAML
}

WATCH_IDLE_GRACE_SECONDS = 30.0

QueryValue = str | int | float | bool | None
RequestObserver = Callable[[str, str, Sequence[tuple[str, str]]], None]


class ListQuery(TypedDict, total=False):
    """What a list asks for, one set of keywords for :meth:`Client.list` (one page) and
    :meth:`Client.list_all` (every page): Kubernetes' list options, each left out when unset."""

    label_selector: str | None
    field_selector: str | None
    limit: int | None  # the page size
    continue_token: str | None  # where the previous page ended
    resource_version: str | None


def encode_query(params: Mapping[str, QueryValue]) -> list[tuple[str, str]]:
    """Query pairs the API server parses strictly: booleans lower-case, ``None`` omitted."""
    out: list[tuple[str, str]] = []
    for key, value in params.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out.append((key, "true" if value else "false"))
        else:
            out.append((key, str(value)))
    return out


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Client:
    """Async access to any resource; use as ``async with Client(cfg) as c:`` or call :meth:`close`."""

    def __init__(self, config: ClientConfig, *, clock: Clock | None = None) -> None:
        self.config = config
        self._clock = clock or RealClock()
        self._bucket = TokenBucket(config.qps, config.burst, clock=self._clock)
        self._origin = Origin.parse(
            config.host,
            ssl_context=config.ssl_context,
            server_hostname=config.tls_server_name,
            proxy=config.proxy,
        )
        self._base_url = config.host.rstrip("/")
        self.host_label = urlsplit(config.host).netloc or config.host
        # The metric children of each (code, method) / method, looked up once: prometheus_client's
        # labels() validates and locks on every call, which every request paid three times.
        self._counted: dict[tuple[str, str], Any] = {}
        self._timed: dict[str, tuple[Any, Any]] = {}
        self._connections: Pool | None = None
        self._observers: list[RequestObserver] = []
        # The head lines every request sends, rendered once.
        self._static_headers = header_line("Accept", "application/json") + header_line(
            "User-Agent", config.user_agent
        )
        self._token_header = header_line("Authorization", config.token) if config.token else ""
        self._content_types: dict[str, str] = {}

    # -- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._connections is not None:
            await self._connections.close()
        self._connections = None

    @property
    def open_connections(self) -> int:
        """Connections held to the API server now, idle keep-alive ones included."""
        return 0 if self._connections is None else self._connections.open_count

    def add_request_observer(self, observer: RequestObserver) -> None:
        """Call ``observer(method, path, query)`` as each request (watches too) is sent: for audits
        of what a component really asks the API server, such as the RBAC test's."""
        self._observers.append(observer)

    def _pool(self) -> Pool:
        if self._connections is None:
            self._connections = Pool(self._origin)
        return self._connections

    async def _headers(self, content_type: str | None) -> str:
        lines = self._static_headers
        if content_type:
            line = self._content_types.get(content_type)
            if line is None:
                line = self._content_types[content_type] = header_line("Content-Type", content_type)
            lines += line
        if self.config.token_source is None:
            return lines + self._token_header
        token = await self.config.token_source() or self.config.token
        return lines + header_line("Authorization", token) if token else lines

    # -- core ------------------------------------------------------------------------------------

    async def _prepare(
        self, method: str, path: str, params: Sequence[tuple[str, str]], content_type: str | None
    ) -> str:
        """What every request (watches too) does before it is sent: wait for the token bucket,
        render the head lines, tell the observers. Returns the head lines."""
        waited = await self._bucket.acquire()
        self._histograms(method)[0].observe(waited)
        headers = await self._headers(content_type)
        for observer in self._observers:
            observer(method, path, params)
        return headers

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, QueryValue] | None = None,
        body: Any = None,
        content_type: str | None = None,
    ) -> Any:
        """Send one request and return the decoded JSON body (``None`` when empty).

        ``body`` may be bytes (sent as is) or anything orjson encodes. Raises an
        :class:`~kuberay_py.client.errors.ApiError` subclass for HTTP errors and
        :class:`~kuberay_py.client.errors.TransportError` when no response arrives in time.
        """
        data: bytes | None
        if body is None:
            data = None
        elif isinstance(body, bytes):
            data = body
        else:
            data = orjson.dumps(body)
            content_type = content_type or "application/json"
        method = method.upper()
        params = encode_query(query) if query else []
        target = request_target(self._origin.base_path, path, params)
        attempt = 0
        while True:
            headers = await self._prepare(method, path, params, content_type)
            started = time.perf_counter()
            try:
                resp = await self._pool().request(method, target, headers, data, self.config.timeout)
            except (TimeoutError, OSError) as e:
                self._observe("<error>", method, started)
                raise TransportError(f"{method} {self._base_url}{path}: {_describe(e)}") from e
            status = resp.status
            raw = resp.body
            self._observe(str(status), method, started)
            if status < 400:
                if not raw:
                    return None
                try:
                    return orjson.loads(raw)
                except orjson.JSONDecodeError as e:
                    sample = raw[:120].decode("utf-8", "replace")
                    raise TransportError(
                        f"{method} {self._base_url}{path}: {status} response is not JSON ({e}): {sample!r}",
                        "UndecodableResponse",
                    ) from e
            retry_after_header = resp.header("Retry-After")
            error = error_from_response(status, raw, retry_after_header=retry_after_header)
            delay = _retry_delay(status, retry_after_header)
            if delay is not None and attempt < self.config.max_retries:
                attempt += 1
                metrics.REQUEST_RETRIES_TOTAL.labels(str(status), method, self.host_label).inc()
                log.info(
                    "api_request_retry_after",
                    method=method,
                    path=path,
                    code=status,
                    retry_after_s=delay,
                    attempt=attempt,
                )
                await self._clock.sleep(delay)
                continue
            raise error

    def _observe(self, code: str, method: str, started: float) -> None:
        counter = self._counted.get((code, method))
        if counter is None:
            counter = metrics.REQUESTS_TOTAL.labels(code, method, self.host_label)
            self._counted[code, method] = counter
        counter.inc()
        self._histograms(method)[1].observe(time.perf_counter() - started)

    def _histograms(self, method: str) -> tuple[Any, Any]:
        """The rate-limiter and request-duration children of ``method``."""
        pair = self._timed.get(method)
        if pair is None:
            pair = self._timed[method] = (
                metrics.RATE_LIMITER_DURATION.labels(method, self.host_label),
                metrics.REQUEST_DURATION.labels(method, self.host_label),
            )
        return pair

    # -- verbs -----------------------------------------------------------------------------------

    @staticmethod
    def _ns(res: Resource, namespace: str | None, what: str) -> str | None:
        if res.namespaced and not namespace:
            raise ValueError(f"{what} {res.kind} needs a namespace")
        return namespace if res.namespaced else None

    async def served(self, res: Resource) -> bool:
        """Whether the API server serves ``res`` (discovery of its group/version; no RBAC needed).

        For kinds that exist only where their CRDs are installed (the Gateway API, for one).
        """
        prefix = f"/apis/{res.group}/{res.version}" if res.group else f"/api/{res.version}"
        try:
            doc = await self.request("GET", prefix)
        except NotFound:
            return False
        return any(r.get("name") == res.plural for r in (doc or {}).get("resources") or [])

    async def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        result: dict[str, Any] = await self.request("GET", res.path(self._ns(res, namespace, "get"), name))
        return result

    async def list(
        self, res: Resource, namespace: str | None = None, **query: Unpack[ListQuery]
    ) -> dict[str, Any]:
        """One page of a list (the ``*List`` object); ``metadata.continue`` is set when more remain.

        kube-apiserver sends the items of a built-in kind's list without ``apiVersion``/``kind``;
        they are filled in from the list (as client-go's unstructured list decoding does), so
        every object a caller or cache holds says what it is.
        """
        params: dict[str, QueryValue] = {
            "labelSelector": query.get("label_selector") or None,
            "fieldSelector": query.get("field_selector") or None,
            "limit": query.get("limit"),
            "continue": query.get("continue_token") or None,
            "resourceVersion": query.get("resource_version"),
        }
        result: dict[str, Any] = await self.request("GET", res.path(namespace), query=params)
        _type_items(result)
        return result

    async def list_all(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        **query: Unpack[ListQuery],
    ) -> dict[str, Any]:
        """Every page, merged into one ``*List``; ``limit`` is the page size.

        ``transform`` is applied to each item as its page arrives, so a cache that slims objects
        holds one raw page at a time, not the whole raw list (start-up memory at 10,000 Pods).
        Like client-go's pager (``FullListIfExpired``): if a ``continue`` token expires half-way
        (410), the list is redone in one unpaginated request rather than returning a partial list.
        """
        # Every page asks the same question; only the position (and, on a relist, the size) moves.
        limit, resource_version = query.get("limit"), query.get("resource_version")
        same_query = functools.partial(
            self.list,
            res,
            namespace,
            label_selector=query.get("label_selector"),
            field_selector=query.get("field_selector"),
        )

        def take(page: dict[str, Any]) -> list[dict[str, Any]]:
            raw = [item for item in page.get("items") or [] if isinstance(item, dict)]
            page["items"] = None  # let the raw page go as soon as its items are slimmed
            return raw if transform is None else [transform(item) for item in raw]

        page = await self.list(res, namespace, **query)
        items = take(page)
        while token := (page.get("metadata") or {}).get("continue"):
            try:
                page = await same_query(limit=limit, continue_token=token)
            except Gone:
                log.info("list_continue_expired_full_relist", resource=str(res), namespace=namespace)
                items.clear()
                page = await same_query(resource_version=resource_version)
                items = take(page)
                break
            items.extend(take(page))
        metadata = dict(page.get("metadata") or {})
        metadata.pop("continue", None)
        metadata.pop("remainingItemCount", None)
        return {
            "apiVersion": page.get("apiVersion", res.api_version),
            "kind": page.get("kind", f"{res.kind}List"),
            "metadata": metadata,
            "items": items,
        }

    async def watch(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        resource_version: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        timeout_seconds: int | None = None,
        allow_bookmarks: bool = True,
    ) -> AsyncGenerator[dict[str, Any], None]:
        """Yield ``{"type", "object"}`` events until the server ends the watch.

        Raises :class:`Gone` on a 410 (as HTTP status or as an ``ERROR`` event), other
        :class:`ApiError` subclasses on other errors, and :class:`TransportError` when the
        stream breaks, goes silent past its idle deadline, or yields garbage. Close it early with
        ``contextlib.aclosing`` (or by breaking out of ``async for``) to release the connection.
        """
        query: dict[str, QueryValue] = {
            "watch": True,
            "resourceVersion": resource_version or None,
            "labelSelector": label_selector or None,
            "fieldSelector": field_selector or None,
            "timeoutSeconds": timeout_seconds,
            "allowWatchBookmarks": allow_bookmarks,
        }
        idle = (
            timeout_seconds + WATCH_IDLE_GRACE_SECONDS
            if timeout_seconds is not None
            else self.config.watch_idle_timeout
        )
        path = res.path(namespace)
        url = self._base_url + path
        params = encode_query(query)
        target = request_target(self._origin.base_path, path, params)
        headers = await self._prepare("GET", path, params, None)
        started = time.perf_counter()
        try:
            resp = await self._pool().stream("GET", target, headers, self.config.timeout, idle)
        except (TimeoutError, OSError) as e:
            self._observe("<error>", "GET", started)
            raise TransportError(f"watch {url}: {_describe(e)}") from e
        self._observe(str(resp.status), "GET", started)
        try:
            if resp.status >= 400:
                try:
                    raw = await resp.read(1 << 20)
                except (TimeoutError, OSError):
                    raw = b""
                raise error_from_response(resp.status, raw, retry_after_header=resp.header("Retry-After"))
            try:
                async for line in iter_lines(resp.chunks()):
                    yield decode_event(line)
            except (TimeoutError, OSError) as e:
                raise TransportError(f"watch {url} broke: {_describe(e)}") from e
        finally:
            resp.close()

    async def create(
        self,
        res: Resource,
        body: dict[str, Any],
        namespace: str | None = None,
        *,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        ns = namespace or (body.get("metadata") or {}).get("namespace")
        query = {"dryRun": "All" if dry_run else None, "fieldManager": field_manager}
        result: dict[str, Any] = await self.request(
            "POST", res.path(self._ns(res, ns, "create")), query=query, body=body
        )
        return result

    async def update(
        self, res: Resource, body: dict[str, Any], *, subresource: str | None = None, dry_run: bool = False
    ) -> dict[str, Any]:
        """PUT the whole object; ``metadata.resourceVersion`` in ``body`` makes it a compare-and-swap."""
        metadata = body.get("metadata") or {}
        name = metadata.get("name")
        if not name:
            raise ValueError(f"update {res.kind}: body has no metadata.name")
        path = res.path(self._ns(res, metadata.get("namespace"), "update"), name, subresource)
        result: dict[str, Any] = await self.request(
            "PUT", path, query={"dryRun": "All" if dry_run else None}, body=body
        )
        return result

    async def update_status(self, res: Resource, body: dict[str, Any]) -> dict[str, Any]:
        return await self.update(res, body, subresource="status")

    async def patch(
        self,
        res: Resource,
        name: str,
        body: dict[str, Any] | builtins.list[Any],
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Patch with an explicit content type; ``apply`` is server-side apply (needs ``field_manager``)."""
        content_type = PATCH_CONTENT_TYPES.get(patch_type)
        if content_type is None:
            raise ValueError(f"unknown patch_type {patch_type!r}; use one of {sorted(PATCH_CONTENT_TYPES)}")
        if patch_type == "json" and not isinstance(body, list):
            raise ValueError("a JSON patch body is a list of operations")
        if patch_type != "json" and not isinstance(body, dict):
            raise ValueError(f"a {patch_type} patch body is an object")
        if patch_type == "apply" and not field_manager:
            raise ValueError("server-side apply needs a field_manager")
        if force is not None and patch_type != "apply":
            raise ValueError("force is only valid for server-side apply")
        query: dict[str, QueryValue] = {
            "fieldManager": field_manager,
            "force": force,
            "dryRun": "All" if dry_run else None,
        }
        path = res.path(self._ns(res, namespace, "patch"), name, subresource)
        result: dict[str, Any] = await self.request(
            "PATCH", path, query=query, body=orjson.dumps(body), content_type=content_type
        )
        return result

    async def delete(
        self,
        res: Resource,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: Literal["Foreground", "Background", "Orphan"] | None = None,
        grace_period_seconds: int | None = None,
        preconditions: dict[str, str] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Delete one object; returns the object (if finalizers keep it) or a success ``Status``."""
        options = _delete_options(propagation_policy, grace_period_seconds, preconditions, dry_run)
        result: dict[str, Any] = await self.request(
            "DELETE", res.path(self._ns(res, namespace, "delete"), name), body=options
        )
        return result

    async def delete_collection(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        propagation_policy: Literal["Foreground", "Background", "Orphan"] | None = None,
    ) -> dict[str, Any]:
        query = {"labelSelector": label_selector or None, "fieldSelector": field_selector or None}
        options = _delete_options(propagation_policy, None, None, False)
        result: dict[str, Any] = await self.request("DELETE", res.path(namespace), query=query, body=options)
        return result


def _delete_options(
    propagation_policy: str | None,
    grace_period_seconds: int | None,
    preconditions: dict[str, str] | None,
    dry_run: bool,
) -> dict[str, Any]:
    options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
    if propagation_policy is not None:
        options["propagationPolicy"] = propagation_policy
    if grace_period_seconds is not None:
        options["gracePeriodSeconds"] = grace_period_seconds
    if preconditions:
        options["preconditions"] = preconditions
    if dry_run:
        options["dryRun"] = ["All"]
    return options


def _type_items(page: Any) -> None:
    """Give each list item the list's apiVersion and item kind when it has neither."""
    if not isinstance(page, dict):
        return
    api_version, list_kind = page.get("apiVersion"), page.get("kind")
    if not isinstance(api_version, str) or not isinstance(list_kind, str) or not list_kind.endswith("List"):
        return
    kind = list_kind[: -len("List")]
    for item in page.get("items") or []:
        if isinstance(item, dict) and not item.get("apiVersion") and not item.get("kind"):
            item["apiVersion"] = api_version
            item["kind"] = kind


def _retry_delay(status: int, retry_after_header: str | None) -> float | None:
    """client-go's ``checkWait``: 429 or 5xx *with* a numeric Retry-After asks us to come back."""
    if status != 429 and status < 500:
        return None
    if not retry_after_header:
        return None
    try:
        return max(0.0, float(retry_after_header.strip()))
    except ValueError:
        return None
