"""The data plane of the simulator's Gateway: one HTTP listener per Gateway listener, proxying to Services.

What a request goes through, in the order a real Gateway (Envoy-based ones such as Istio's)
applies it:

1. **Route match** among the HTTPRoutes attached to this listener (those the controller accepted):
   the route's ``hostnames`` against the ``Host`` header (none = any), then each rule's ``matches``
   (path ``Exact`` / ``PathPrefix`` / ``RegularExpression``, ``method``, exact ``headers``). The
   most specific match wins, as the spec orders it: an Exact path over a prefix, a longer prefix
   over a shorter one, then more header matches, then the older route. No match: 404.
2. **Backend choice** within the rule, in proportion to the ``weight`` of each ``backendRef``
   (default 1), by smooth weighted round robin: over any window of N requests every backend gets
   its share to within one request, so a test can compare a measured share with the weight without
   statistics. All weights 0, or a chosen backend that does not resolve (no such Service, no such
   port): 500, as the spec requires.
3. **Endpoint choice** among the Service's EndpointSlice endpoints that are ready (``ready`` unset
   counts as ready), round robin, on the slice port named like the Service port. None ready: 503
   ``no healthy upstream``.
4. **Forwarding** over HTTP/1.1 with the request's method, path, query, headers and body. A
   connection that cannot be opened is retried once on another ready endpoint (nothing was sent;
   this is Istio's default ``connect-failure`` retry); any other upstream failure is a 503.

Not implemented (the controller marks a route using them as not Accepted): filters, timeouts,
session persistence, query-parameter matches, TLS listeners.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from kuberay_py.cache import Cache
from kuberay_py.client import resources
from kuberay_py.log import get_logger

__all__ = ["ListenerServer", "RouteTable", "WeightedBackends", "rule_matches"]

log = get_logger("kuberay_py.envtest.sim.gateway")

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "content-length",
}
_UPSTREAM_TIMEOUT = aiohttp.ClientTimeout(total=30.0, connect=2.0)


class WeightedBackends:
    """Smooth weighted round robin over one rule's backendRefs (nginx's algorithm)."""

    def __init__(self, backends: list[dict[str, Any]]) -> None:
        self.backends = backends
        self._current = [0] * len(backends)

    def weights(self) -> list[int]:
        return [1 if b.get("weight") is None else int(b["weight"]) for b in self.backends]

    def pick(self) -> dict[str, Any] | None:
        weights = self.weights()
        total = sum(weights)
        if total <= 0:
            return None
        best = 0
        for i, weight in enumerate(weights):
            self._current[i] += weight
            if self._current[i] > self._current[best]:
                best = i
        self._current[best] -= total
        return self.backends[best]


@dataclass
class _Rule:
    route_ns: str
    hostnames: list[str]
    matches: list[dict[str, Any]]
    backends: WeightedBackends
    order: tuple[str, str, str]  # (creationTimestamp, namespace, name): older routes win ties


@dataclass
class RouteTable:
    """The routes programmed on one listener (replaced as a whole when the controller reconciles)."""

    rules: list[_Rule] = field(default_factory=list)

    @classmethod
    def build(cls, routes: Iterable[dict[str, Any]], previous: RouteTable | None = None) -> RouteTable:
        """Keep each rule's round-robin state when its backends did not change."""
        old = {(r.order, i): r for i, r in enumerate(previous.rules)} if previous else {}
        rules: list[_Rule] = []
        for route in routes:
            meta = route["metadata"]
            order = (str(meta.get("creationTimestamp") or ""), meta["namespace"], meta["name"])
            spec = route.get("spec") or {}
            for rule in spec.get("rules") or []:
                backends = list(rule.get("backendRefs") or [])
                kept = old.get((order, len(rules)))
                wrr = (
                    kept.backends
                    if kept and kept.backends.backends == backends
                    else WeightedBackends(backends)
                )
                matches = rule.get("matches") or [{"path": {"type": "PathPrefix", "value": "/"}}]
                rules.append(_Rule(meta["namespace"], list(spec.get("hostnames") or []), matches, wrr, order))
        return cls(rules)

    def select(self, host: str, method: str, path: str, headers: Any) -> _Rule | None:
        best: tuple[tuple[int, int, int], tuple[str, str, str], _Rule] | None = None
        for rule in self.rules:
            if rule.hostnames and not _host_matches(rule.hostnames, host):
                continue
            for match in rule.matches:
                score = rule_matches(match, method, path, headers)
                if score is None:
                    continue
                if best is None or score > best[0] or (score == best[0] and rule.order < best[1]):
                    best = (score, rule.order, rule)
        return best[2] if best else None


def _host_matches(hostnames: list[str], host: str) -> bool:
    host = host.split(":", 1)[0].lower()
    for name in hostnames:
        name = name.lower()
        if name == host or (name.startswith("*.") and host.endswith(name[1:]) and host != name[2:]):
            return True
    return False


def rule_matches(match: dict[str, Any], method: str, path: str, headers: Any) -> tuple[int, int, int] | None:
    """A precedence score (higher wins) when ``match`` accepts the request, else None."""
    path_match = match.get("path") or {"type": "PathPrefix", "value": "/"}
    kind, value = path_match.get("type", "PathPrefix"), str(path_match.get("value", "/"))
    exact = 0
    if kind == "Exact":
        if path != value:
            return None
        exact = 1
    elif kind == "PathPrefix":
        prefix = value.rstrip("/")
        if prefix and not (path == prefix or path.startswith(prefix + "/")):
            return None
    elif kind == "RegularExpression":
        if re.fullmatch(value, path) is None:
            return None
    else:
        return None
    if match.get("method") and match["method"] != method:
        return None
    header_matches = match.get("headers") or []
    for header in header_matches:
        if header.get("type", "Exact") != "Exact" or headers.get(header["name"]) != header.get("value"):
            return None
    return (exact, len(value), len(header_matches))


class ListenerServer:
    """An aiohttp server on ``address:port`` serving one Gateway listener's route table."""

    def __init__(self, cache: Cache, address: str, port: int) -> None:
        self.cache = cache
        self.address, self.port = address, port
        self.table = RouteTable()
        self._rr: dict[tuple[str, str, int], int] = {}
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=0.5)
        self._session: aiohttp.ClientSession | None = None
        self.requests = 0

    async def start(self) -> None:
        await self._runner.setup()
        try:
            await web.TCPSite(self._runner, self.address, self.port, reuse_address=True).start()
        except BaseException:
            await self._runner.cleanup()
            raise
        self._session = aiohttp.ClientSession(timeout=_UPSTREAM_TIMEOUT, auto_decompress=False)

    async def stop(self) -> None:
        try:
            await self._runner.cleanup()
        finally:
            if self._session is not None:
                await self._session.close()

    # -- request path ----------------------------------------------------------------------------
    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests += 1
        rule = self.table.select(request.host, request.method, request.path, request.headers)
        if rule is None:
            return web.Response(status=404, text="route not found")
        backend = rule.backends.pick()
        if backend is None:
            return web.Response(status=500, text="all backends have weight 0")
        targets = self._endpoints(rule.route_ns, backend)
        if targets is None:
            return web.Response(status=500, text="backend not resolved")
        if not targets:
            return web.Response(status=503, text="no healthy upstream")
        body = await request.read()
        key = (rule.route_ns, str(backend.get("name")), int(backend.get("port") or 0))
        start = self._rr.get(key, 0)
        self._rr[key] = start + 1
        for attempt in range(min(2, len(targets))):
            host, port = targets[(start + attempt) % len(targets)]
            try:
                return await self._forward(request, body, host, port)
            except aiohttp.ClientConnectorError:
                continue  # nothing reached the upstream: safe to try another endpoint
            except (aiohttp.ClientError, TimeoutError) as exc:
                return web.Response(status=503, text=f"upstream reset: {type(exc).__name__}")
        return web.Response(status=503, text="upstream connect error")

    async def _forward(self, request: web.Request, body: bytes, host: str, port: int) -> web.Response:
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        url = f"http://{host}:{port}{request.rel_url}"
        async with self._session.request(
            request.method, url, headers=headers, data=body or None, allow_redirects=False
        ) as upstream:
            payload = await upstream.read()
            out = {k: v for k, v in upstream.headers.items() if k.lower() not in _HOP_BY_HOP}
            return web.Response(status=upstream.status, body=payload, headers=out)

    def _endpoints(self, route_ns: str, backend: dict[str, Any]) -> list[tuple[str, int]] | None:
        """Ready (address, port) pairs of the backend Service, or None when it does not resolve."""
        if backend.get("group") not in (None, "") or backend.get("kind") not in (None, "Service"):
            return None
        namespace = backend.get("namespace") or route_ns
        service = self.cache.get(resources.SERVICES, str(backend.get("name")), namespace)
        if service is None:
            return None
        port = next(
            (
                p
                for p in (service.get("spec") or {}).get("ports") or []
                if p.get("port") == backend.get("port")
            ),
            None,
        )
        if port is None:
            return None
        out: list[tuple[str, int]] = []
        slices = self.cache.list(
            resources.ENDPOINTSLICES, namespace, labels={SERVICE_NAME_LABEL: service["metadata"]["name"]}
        )
        for eps in sorted(slices, key=lambda s: str(s["metadata"]["name"])):
            number = next(
                (
                    p.get("port")
                    for p in eps.get("ports") or []
                    if (p.get("name") or "") == (port.get("name") or "")
                ),
                None,
            )
            if number is None:
                continue
            for endpoint in eps.get("endpoints") or []:
                if (endpoint.get("conditions") or {}).get("ready") is False:
                    continue
                out.extend((address, int(number)) for address in endpoint.get("addresses") or [])
        return out
