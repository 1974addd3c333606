"""Endpoint address validation as kube-apiserver does it (``ValidateEndpointIP``).

An EndpointSlice (and a core/v1 Endpoints) may not name an unspecified, loopback or link-local
address, and each address must be of the slice's ``addressType``: the service proxy would route
traffic to the node itself. A real server answers such a write with 422, so the built-in server
does too; otherwise code that publishes ``127.x`` endpoints works here and fails in every cluster.

One knob departs from this on purpose: ``accept_loopback`` (off by default) lets loopback
addresses through, for a simulator that could not get a pod network on this host (no
``CAP_NET_ADMIN``) and so gave its Pods loopback addresses. Only the built-in server has it.
"""

from __future__ import annotations

import ipaddress
import re

from .core import ApiCore, Obj
from .errors import Cause
from .kinds import NoHooks
from .podvalidation import not_supported
from .registry import ResourceType
from .validation import invalid, required

__all__ = ["ADDRESS_TYPES", "EndpointsHooks", "endpoint_ip_problems"]

ADDRESS_TYPES = ("FQDN", "IPv4", "IPv6")
_FQDN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def endpoint_ip_problems(address: str, *, accept_loopback: bool = False) -> list[str]:
    """kube-apiserver's messages for an address a Service's endpoints may not use."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return ["must be a valid IP address"]
    problems = []
    if ip.is_unspecified:
        problems.append(f"may not be unspecified ({address})")
    if ip.is_loopback and not accept_loopback:
        problems.append("may not be in the loopback range (127.0.0.0/8, ::1/128)")
    if ip.is_link_local and not ip.is_multicast:
        problems.append("may not be in the link-local range (169.254.0.0/16, fe80::/10)")
    if ip in ipaddress.ip_network("224.0.0.0/24") or ip in ipaddress.ip_network("ff02::/16"):
        problems.append("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")
    return problems


_NOT_AN_IP = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


def _address_problems(address: str, address_type: str, accept_loopback: bool) -> tuple[list[str], list[str]]:
    """(problems reported at ``addresses``, problems reported at ``addresses[j]``).

    kube-apiserver v1.36 reports an address that is no IP, or one of the other family, against
    the ``addresses`` list (``endpoints[0].addresses: Invalid value: "10.244.0.5": must be an IPv6
    address``) and the unspecified/loopback/link-local checks against the address itself
    (``endpoints[0].addresses[0]``); FQDN addresses are checked one by one.
    """
    if address_type == "FQDN":
        ok = len(address) <= 253 and _FQDN.match(address)
        return [], [] if ok else ["must be a valid DNS subdomain (RFC 1123)"]
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return [_NOT_AN_IP], []
    wanted = 4 if address_type == "IPv4" else 6
    family = [] if ip.version == wanted else [f"must be an {address_type} address"]
    return family, endpoint_ip_problems(address, accept_loopback=accept_loopback)


class EndpointsHooks(NoHooks):
    """Validation for ``discovery.k8s.io/v1`` EndpointSlices and core/v1 Endpoints (no defaulting)."""

    def __init__(self, *, accept_loopback: bool = False) -> None:
        self.accept_loopback = accept_loopback

    def _slice(self, obj: Obj) -> list[Cause]:
        address_type = obj.get("addressType")
        if not address_type:
            return [required("addressType")]
        if address_type not in ADDRESS_TYPES:
            return [not_supported("addressType", address_type, ADDRESS_TYPES)]
        causes: list[Cause] = []
        for i, endpoint in enumerate(obj.get("endpoints") or []):
            path = f"endpoints[{i}].addresses"
            addresses = endpoint.get("addresses") if isinstance(endpoint, dict) else None
            if not isinstance(addresses, list) or not addresses:
                causes.append(required(path, "must contain at least 1 address"))
                continue
            for j, address in enumerate(addresses):
                of_list, of_address = _address_problems(str(address), address_type, self.accept_loopback)
                causes.extend(invalid(path, address, problem) for problem in of_list)
                causes.extend(invalid(f"{path}[{j}]", address, problem) for problem in of_address)
        return causes

    def _endpoints(self, obj: Obj) -> list[Cause]:
        causes: list[Cause] = []
        for i, subset in enumerate(obj.get("subsets") or []):
            if not isinstance(subset, dict):
                continue
            for key in ("addresses", "notReadyAddresses"):
                for j, address in enumerate(subset.get(key) or []):
                    ip = str(address.get("ip", "")) if isinstance(address, dict) else ""
                    path = f"subsets[{i}].{key}[{j}].ip"
                    for problem in endpoint_ip_problems(ip, accept_loopback=self.accept_loopback):
                        causes.append(invalid(path, ip, problem))
        return causes

    def _validate(self, rt: ResourceType, obj: Obj) -> list[Cause]:
        return self._slice(obj) if rt.group == "discovery.k8s.io" else self._endpoints(obj)

    def prepare_create(self, core: ApiCore, rt: ResourceType, obj: Obj) -> list[Cause]:
        return self._validate(rt, obj)

    def prepare_update(
        self, core: ApiCore, rt: ResourceType, old: Obj, new: Obj, subresource: str | None
    ) -> list[Cause]:
        causes = self._validate(rt, new)
        if rt.group == "discovery.k8s.io" and old.get("addressType") != new.get("addressType"):
            causes.append(invalid("addressType", new.get("addressType"), "field is immutable"))
        return causes
