"""The ``services/proxy`` subresource: kube-apiserver forwarding a request to one of a Service's endpoints.

``/api/v1/namespaces/NS/services/[SCHEME:]NAME[:PORT]/proxy/PATH`` reaches ``PATH`` (and the query)
on one ready endpoint of the Service, which is how an operator outside the Pod network (KubeRay's
``--use-kubernetes-proxy``) talks to a Ray dashboard. The rules follow kube-apiserver's Service
``ResourceLocation``:

* the id splits as ``name``, ``name:port`` or ``scheme:name:port`` (scheme ``http`` or ``https``,
  default ``http``); anything else is 400 ``invalid service request "<id>"``;
* a missing Service is the usual 404; a port *number* is translated to the Service port's name,
  and no such Service port is 503 ``no service port N found for service "<name>"``;
* a Service without endpoints objects is 404 ``endpoints "<name>" not found``;
* the endpoint is a random ready address (EndpointSlice ``ready`` unset counts as ready) of the
  Service's EndpointSlices whose slice port carries that port name (a named port's number is the
  slice port's, as a ``targetPort`` resolved by the EndpointSlice controller); none is 503
  ``no endpoints available for service "<name>"``;
* a dial that fails is 503 ``error trying to reach service: dial tcp IP:PORT: <reason>``.

``/api/v1/namespaces/NS/pods/[SCHEME:]NAME[:PORT]/proxy/PATH`` goes to the Pod's own IP (and the
port given, a number): a Pod without a usable address (none yet, loopback, link-local,
unspecified) is 400 ``address not allowed``, as kube-apiserver's proxyable-address check answers.

kube-apiserver reads the legacy Endpoints object the endpoints controller mirrors from the same
Pods; the built-in server has no endpoints controller, so it reads the EndpointSlices (the same
addresses). The caller's ``Authorization`` header authenticates to the API server and is not
forwarded, as kube-apiserver's authentication filter removes it; other headers and the body are.
"""

from __future__ import annotations

import ipaddress
import random
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web

from .core import ApiCore
from .errors import StatusError

__all__ = ["ProxyTarget", "ServiceProxy", "split_service_id"]

SERVICES_KEY = ("", "services")
PODS_KEY = ("", "pods")
SLICES_KEY = ("discovery.k8s.io", "endpointslices")
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
# RFC 7230 hop-by-hop headers, plus what the API server consumes itself.
_NOT_FORWARDED = {
    "authorization",
    "connection",
    "content-length",
    "host",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
}
_NOT_RETURNED = _NOT_FORWARDED - {"authorization"} | {"content-encoding"}


def split_service_id(service_id: str) -> tuple[str, str, str] | None:
    """``(scheme, name, port)`` of ``[scheme:]name[:port]`` (utilnet.SplitSchemeNamePort), or None."""
    parts = service_id.split(":")
    if len(parts) == 1:
        scheme, name, port = "", parts[0], ""
    elif len(parts) == 2:
        scheme, name, port = "", parts[0], parts[1]
    elif len(parts) == 3:
        scheme, name, port = parts
    else:
        return None
    if not name or scheme not in ("", "http", "https"):
        return None
    return scheme, name, port


@dataclass(frozen=True)
class ProxyTarget:
    """Where one proxied request goes: ``scheme://host:port``."""

    scheme: str
    host: str
    port: int

    @property
    def base(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


class ServiceProxy:
    """Resolves a Service to an endpoint and forwards requests there (one pooled client session)."""

    def __init__(self, core: ApiCore, *, timeout: float = 60.0) -> None:
        self.core = core
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None
        # Mirrors the server's accept_loopback_endpoint_addresses (simulated Pods on 127/8).
        self.allow_loopback = False

    def resolve(self, namespace: str, service_id: str) -> ProxyTarget:
        split = split_service_id(service_id)
        if split is None:
            raise StatusError.bad_request(f'invalid service request "{service_id}"')
        scheme, name, port = split
        service = self.core.storage.get(SERVICES_KEY, namespace, name)
        if service is None:
            raise StatusError.not_found("", "services", name)
        port_name = port
        if port.isdigit():
            named = [
                p.get("name") or ""
                for p in (service.get("spec") or {}).get("ports") or []
                if str(p.get("port")) == port
            ]
            if not named:
                raise StatusError(
                    503, "ServiceUnavailable", f'no service port {port} found for service "{name}"'
                )
            port_name = named[0]
        slices = self._slices(namespace, name)
        if not slices:  # what kube-apiserver says when the Service has no Endpoints object
            raise StatusError.not_found("", "endpoints", name)
        candidates: list[tuple[str, int]] = []
        for eps in slices:
            ports = [p for p in eps.get("ports") or [] if (p.get("name") or "") == port_name]
            if not ports or ports[0].get("port") is None:
                continue
            for endpoint in eps.get("endpoints") or []:
                if (endpoint.get("conditions") or {}).get("ready") is False:
                    continue
                candidates.extend((str(a), int(ports[0]["port"])) for a in endpoint.get("addresses") or [])
        if not candidates:
            raise StatusError(503, "ServiceUnavailable", f'no endpoints available for service "{name}"')
        host, number = random.choice(candidates)
        return ProxyTarget(scheme or "http", host, number)

    def _slices(self, namespace: str, service: str) -> list[dict[str, Any]]:
        bucket = self.core.storage.buckets.get(SLICES_KEY)
        if bucket is None:
            return []
        slices = (bucket.objects[key] for key in bucket.iter_namespace(namespace))
        return [
            s
            for s in slices
            if ((s.get("metadata") or {}).get("labels") or {}).get(SERVICE_NAME_LABEL) == service
        ]

    def resolve_pod(self, namespace: str, pod_id: str) -> ProxyTarget:
        split = split_service_id(pod_id)
        if split is None:
            raise StatusError.bad_request(f'invalid pod request "{pod_id}"')
        scheme, name, port = split
        pod = self.core.storage.get(PODS_KEY, namespace, name)
        if pod is None:
            raise StatusError.not_found("", "pods", name)
        ip = str((pod.get("status") or {}).get("podIP") or "")
        try:
            address = ipaddress.ip_address(ip)
        except ValueError:
            raise StatusError.bad_request("address not allowed") from None
        if not self.allow_loopback and (
            address.is_loopback or address.is_link_local or address.is_unspecified
        ):
            raise StatusError.bad_request("address not allowed")
        return ProxyTarget(scheme or "http", ip, int(port) if port.isdigit() else 80)

    async def forward(
        self, request: web.Request, namespace: str, service_id: str, path: str, *, pod: bool = False
    ) -> web.Response:
        """Send ``request`` to ``path`` on an endpoint of the Service (or the Pod); its answer, or a
        Status error."""
        target = self.resolve_pod(namespace, service_id) if pod else self.resolve(namespace, service_id)
        url = target.base + (path or "/")
        if request.query_string:
            url += "?" + request.query_string
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _NOT_FORWARDED}
        body = await request.read()
        try:
            async with self._http().request(
                request.method,
                url,
                headers=headers,
                data=body or None,
                allow_redirects=False,
                timeout=self._timeout,
            ) as upstream:
                payload = await upstream.read()
                out = {k: v for k, v in upstream.headers.items() if k.lower() not in _NOT_RETURNED}
                return web.Response(status=upstream.status, body=payload, headers=out)
        except aiohttp.ClientConnectorError as exc:
            reason = _dial_reason(exc)
            raise StatusError(
                503,
                "ServiceUnavailable",
                f"error trying to reach service: dial tcp {target.base.split('://', 1)[1]}: {reason}",
            ) from None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise StatusError(
                503, "ServiceUnavailable", f"error trying to reach service: {type(exc).__name__}: {exc}"
            ) from None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # Endpoints are Pod addresses: never through an environment proxy; the Pods' own TLS
            # (scheme https) is not verified, as kube-apiserver's proxy transport does not.
            connector = aiohttp.TCPConnector(ssl=False)
            self._session = aiohttp.ClientSession(connector=connector, trust_env=False, auto_decompress=False)
        return self._session

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()


def _dial_reason(exc: aiohttp.ClientConnectorError) -> str:
    os_error: Any = exc.os_error
    if isinstance(os_error, ConnectionRefusedError):
        return "connect: connection refused"
    text = getattr(os_error, "strerror", None) or str(os_error)
    return f"connect: {str(text).lower()}"
