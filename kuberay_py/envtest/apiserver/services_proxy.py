"""The ``services/proxy`` subresource: kube-apiserver forwarding a request to one of a Service's endpoints.

``/api/v1/namespaces/NS/services/[SCHEME:]NAME[:PORT]/proxy/PATH`` reaches ``PATH`` (and the query)
on one ready endpoint of the Service, which is how an operator outside the Pod network (KubeRay's
``--use-kubernetes-proxy``) talks to a Ray dashboard. The rules follow kube-apiserver's Service
``ResourceLocation``:

* the id splits as ``name``, ``name:port`` or ``scheme:name:port`` (scheme ``http`` or ``https``,
  default ``http``); anything else is 400 ``invalid service request "<id>"``;
* a port *number* is translated to the Service port's name (a missing Service is the usual 404
  ``services "<name>" not found``), and no such Service port is 503
  ``no service port N found for service "<name>"``;
* the endpoints are the Service's core/v1 **Endpoints** object, as kube-apiserver reads them (the
  simulator's endpoints controller writes it, as kube-controller-manager's does): none is 404
  ``services "<name>" not found`` (kube-apiserver names the Service, not the Endpoints), one
  without subsets is 503 ``no endpoints available for service "<name>"``;
* the endpoint is a random ready address of a subset that has the port name, whose ``targetRef``
  is a Pod of the namespace that still has that IP (``isValidAddress``: a bare IP is never
  dialled); none is 503 ``no endpoints available for service "<id>"``, naming the whole id;
* a dial that fails is 503 ``error trying to reach service: dial tcp IP:PORT: <reason>``.

``/api/v1/namespaces/NS/pods/[SCHEME:]NAME[:PORT]/proxy/PATH`` goes to the Pod's own IP (and the
port given, a number): a Pod without a usable address (none yet, loopback, link-local,
unspecified) is 400 ``address not allowed``, as kube-apiserver's proxyable-address check answers.

The caller's ``Authorization`` header authenticates to the API server and is not
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
ENDPOINTS_KEY = ("", "endpoints")
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
        port_name = port
        if port.isdigit():
            service = self.core.storage.get(SERVICES_KEY, namespace, name)
            if service is None:
                raise StatusError.not_found("", "services", name)
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
        endpoints = self.core.storage.get(ENDPOINTS_KEY, namespace, name)
        if endpoints is None:  # kube-apiserver names the Service, not the Endpoints, in this 404
            raise StatusError.not_found("", "services", name)
        subsets = endpoints.get("subsets") or []
        if not subsets:
            raise StatusError(503, "ServiceUnavailable", f'no endpoints available for service "{name}"')
        start = random.randrange(len(subsets))
        for i in range(len(subsets)):
            subset = subsets[(start + i) % len(subsets)]
            addresses = subset.get("addresses") or []
            if not addresses:
                continue
            for endpoint_port in subset.get("ports") or []:
                if (endpoint_port.get("name") or "") != port_name:
                    continue
                seed = random.randrange(len(addresses))
                for attempt in range(len(addresses)):
                    address = addresses[(seed + attempt) % len(addresses)]
                    if self._is_pod_address(namespace, address):
                        return ProxyTarget(scheme or "http", str(address["ip"]), int(endpoint_port["port"]))
        raise StatusError(503, "ServiceUnavailable", f'no endpoints available for service "{service_id}"')

    def _is_pod_address(self, namespace: str, address: dict[str, Any]) -> bool:
        """``isValidAddress``: the address names a Pod of this namespace that still has that IP."""
        ref = address.get("targetRef") or {}
        if not ref or ref.get("namespace", "") != namespace:
            return False
        pod = self.core.storage.get(PODS_KEY, namespace, str(ref.get("name", "")))
        ips = [p.get("ip") for p in ((pod or {}).get("status") or {}).get("podIPs") or []]
        return address.get("ip") in ips

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
