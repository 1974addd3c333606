"""What a Service's core/v1 Endpoints should contain (``pkg/controller/endpoint``), as pure functions.

kube-apiserver's ``services/proxy`` (and anything still reading the legacy API) resolves a Service
through its Endpoints object, not its EndpointSlices, so the simulator keeps both. The rules
differ from the slices' in a few places, all upstream's:

* a terminating Pod is left out entirely (not flagged), unless the Service publishes not-ready
  addresses; a Pod that is not Ready goes to ``notReadyAddresses``;
* an address is the Pod's first IP of the Service's family, with ``nodeName`` and a ``targetRef``
  (the API server's proxy only dials an address whose ``targetRef`` Pod still has that IP), plus
  ``hostname`` when the Pod's ``subdomain`` is the Service;
* one (address, port) pair per Service port is built and then repacked (``RepackSubsets``): the
  addresses offering the same set of ports share one subset; an address not ready on any port is
  not ready on all of them; a headless Service without ports lists its addresses with no ports;
* at most 1000 addresses (ready ones first), beyond which the object is truncated and annotated
  ``endpoints.kubernetes.io/over-capacity: truncated``.

Upstream orders ports and subsets by a hash of their contents; here ports go by name and number
and subsets by their first address, an order that is equally stable and carries no meaning.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kuberay_py.clock import parse_rfc3339
from kuberay_py.envtest.sim.membership import find_port, pod_in_endpoints, pod_ready, selector_matches

__all__ = [
    "HEADLESS_LABEL",
    "LAST_CHANGE_TRIGGER_TIME",
    "MAX_CAPACITY",
    "OVER_CAPACITY",
    "TriggerTimeTracker",
    "desired_subsets",
    "endpoints_labels",
    "repack_subsets",
    "truncate_subsets",
]

HEADLESS_LABEL = "service.kubernetes.io/headless"
LAST_CHANGE_TRIGGER_TIME = "endpoints.kubernetes.io/last-change-trigger-time"
OVER_CAPACITY = "endpoints.kubernetes.io/over-capacity"
MAX_CAPACITY = 1000

Obj = dict[str, Any]
AddressKey = tuple[str, str]  # (ip, targetRef uid)
PortKey = tuple[str, int, str, str]  # (name, port, protocol, appProtocol); port -1: "no ports"
_NO_PORTS: PortKey = ("", -1, "", "")


def _service_family_is_v6(service: Obj) -> bool:
    spec = service.get("spec") or {}
    families = spec.get("ipFamilies") or []
    if families:
        return bool(families[0] == "IPv6")
    return ":" in str(spec.get("clusterIP") or "")


def endpoint_address(service: Obj, pod: Obj) -> Obj | None:
    """``podToEndpointAddressForService``: the Pod's IP of the Service's family, or None."""
    status = pod.get("status") or {}
    ips = [p.get("ip", "") for p in status.get("podIPs") or []] or [status.get("podIP", "")]
    want_v6 = _service_family_is_v6(service)
    ip = next((i for i in ips if i and (":" in i) == want_v6), None)
    if ip is None:
        return None
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    address: Obj = {"ip": ip}
    svc_meta = service.get("metadata") or {}
    if (
        spec.get("hostname")
        and spec.get("subdomain") == svc_meta.get("name")
        and meta.get("namespace") == svc_meta.get("namespace")
    ):
        address["hostname"] = spec["hostname"]
    if spec.get("nodeName"):
        address["nodeName"] = spec["nodeName"]
    address["targetRef"] = {
        "kind": "Pod",
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
    }
    return address


def _port_of(port: Obj) -> PortKey:
    return (
        port.get("name", ""),
        int(port.get("port", 0)),
        port.get("protocol", ""),
        port.get("appProtocol", ""),
    )


def _port_doc(key: PortKey) -> Obj:
    name, number, protocol, app_protocol = key
    doc: Obj = (
        {"name": name, "port": number, "protocol": protocol}
        if name
        else {"port": number, "protocol": protocol}
    )
    if app_protocol:
        doc["appProtocol"] = app_protocol
    return doc


def _address_key(address: Obj) -> AddressKey:
    return (str(address.get("ip", "")), str((address.get("targetRef") or {}).get("uid", "")))


def _address_order(address: Obj) -> tuple[int, bytes, str]:
    try:
        ip = ipaddress.ip_address(str(address.get("ip", "")))
        return (ip.version, ip.packed, _address_key(address)[1])
    except ValueError:
        return (0, str(address.get("ip", "")).encode(), _address_key(address)[1])


def repack_subsets(subsets: list[Obj]) -> list[Obj]:
    """``RepackSubsets``: the fewest subsets, each the addresses that offer one same set of ports."""
    addresses: dict[AddressKey, Obj] = {}
    by_port: dict[PortKey, dict[AddressKey, bool]] = {}
    for subset in subsets:
        ports = [_port_of(p) for p in subset.get("ports") or []] or [_NO_PORTS]
        for port in ports:
            readiness = by_port.setdefault(port, {})
            for ready, field_name in ((True, "addresses"), (False, "notReadyAddresses")):
                for address in subset.get(field_name) or []:
                    key = _address_key(address)
                    addresses.setdefault(key, address)
                    if readiness.get(key, True):  # not ready on a port trumps ready
                        readiness[key] = ready
    groups: dict[frozenset[tuple[AddressKey, bool]], list[PortKey]] = {}
    for port, readiness in by_port.items():
        ports = groups.setdefault(frozenset(readiness.items()), [])
        if port != _NO_PORTS:
            ports.append(port)
    result: list[Obj] = []
    for members, ports in groups.items():
        packed: Obj = {}
        for ready, field_name in ((True, "addresses"), (False, "notReadyAddresses")):
            listed = sorted((addresses[k] for k, r in members if r is ready), key=_address_order)
            if listed:
                packed[field_name] = listed
        if ports:
            packed["ports"] = [_port_doc(p) for p in sorted(ports, key=lambda p: (p[0], p[1], p[2]))]
        result.append(packed)
    return sorted(result, key=_subset_order)


def _subset_order(subset: Obj) -> tuple[Any, ...]:
    first = (subset.get("addresses") or subset.get("notReadyAddresses") or [{}])[0]
    return (_address_order(first), [(p.get("name", ""), p.get("port", 0)) for p in subset.get("ports") or []])


def desired_subsets(service: Obj, pods: list[Obj]) -> list[Obj]:
    """The Service's Endpoints subsets from the Pods in its namespace (``syncService``)."""
    spec = service.get("spec") or {}
    selector = spec.get("selector") or {}
    publish = bool(spec.get("publishNotReadyAddresses"))
    service_ports = spec.get("ports") or []
    subsets: list[Obj] = []
    for pod in pods:
        if not selector_matches(selector, (pod.get("metadata") or {}).get("labels")):
            continue
        if not pod_in_endpoints(pod, include_terminating=publish):
            continue
        address = endpoint_address(service, pod)
        if address is None:
            continue
        field_name = "addresses" if publish or pod_ready(pod) else "notReadyAddresses"
        if not service_ports:
            if spec.get("clusterIP") == "None":  # a headless Service may have no ports
                subsets.append({field_name: [address]})
            continue
        for sp in service_ports:
            protocol = sp.get("protocol", "TCP")
            number = find_port(pod, sp.get("targetPort", sp.get("port")), protocol)
            if number is None:
                continue
            port: Obj = {"name": sp.get("name", ""), "port": number, "protocol": protocol}
            if sp.get("appProtocol"):
                port["appProtocol"] = sp["appProtocol"]
            subsets.append({field_name: [address], "ports": [port]})
    return repack_subsets(subsets)


def truncate_subsets(subsets: list[Obj]) -> bool:
    """``truncateEndpoints``: cut ``subsets`` in place to :data:`MAX_CAPACITY` addresses, ready ones
    first, each subset keeping its share; True when something was cut."""
    ready = sum(len(s.get("addresses") or []) for s in subsets)
    not_ready = sum(len(s.get("notReadyAddresses") or []) for s in subsets)
    if ready + not_ready <= MAX_CAPACITY:
        return False
    cut_ready = ready > MAX_CAPACITY
    room, total = (MAX_CAPACITY, ready) if cut_ready else (MAX_CAPACITY - ready, not_ready)
    left = room
    field_name = "addresses" if cut_ready else "notReadyAddresses"
    for subset in subsets:
        share = min(math.ceil(len(subset.get(field_name) or []) / total * room), left)
        kept = (subset.get(field_name) or [])[:share]
        if kept:
            subset[field_name] = kept
        else:
            subset.pop(field_name, None)
        if cut_ready:
            subset.pop("notReadyAddresses", None)
        left -= len(kept)
    return True


def endpoints_labels(service: Obj) -> dict[str, str]:
    """The Service's labels, plus ``service.kubernetes.io/headless`` when it has no cluster IP."""
    labels = dict((service.get("metadata") or {}).get("labels") or {})
    labels.pop(HEADLESS_LABEL, None)
    if (service.get("spec") or {}).get("clusterIP") in (None, "", "None"):
        labels[HEADLESS_LABEL] = ""
    return labels


@dataclass
class _ServiceState:
    service_time: datetime | None = None
    pod_times: dict[str, datetime] = field(default_factory=dict)


class TriggerTimeTracker:
    """``endpointsliceutil.TriggerTimeTracker``: when the change an Endpoints write reflects began.

    The value is the earliest of the changes seen since the previous sync: a Pod's Ready condition
    transition newer than the last one seen, or the Service's creation the first time the Service
    is synced. None means no new change (the annotation is then removed).
    """

    def __init__(self) -> None:
        self._states: dict[tuple[str, str], _ServiceState] = {}

    def compute(self, namespace: str, service: Obj, pods: list[Obj]) -> datetime | None:
        key = (namespace, (service.get("metadata") or {}).get("name", ""))
        known = key in self._states
        state = self._states.setdefault(key, _ServiceState())
        earliest: datetime | None = None
        pod_times: dict[str, datetime] = {}
        for pod in pods:
            when = _ready_transition(pod)
            if when is None:
                continue
            name = (pod.get("metadata") or {}).get("name", "")
            pod_times[name] = when
            last = state.pod_times.get(name)
            if last is None or when > last:
                earliest = when if earliest is None else min(earliest, when)
        created = parse_rfc3339((service.get("metadata") or {}).get("creationTimestamp"))
        if created is not None and (state.service_time is None or created > state.service_time):
            earliest = created if earliest is None else min(earliest, created)
        state.pod_times, state.service_time = pod_times, created
        return created if not known else earliest

    def forget(self, namespace: str, name: str) -> None:
        self._states.pop((namespace, name), None)


def _ready_transition(pod: Obj) -> datetime | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return parse_rfc3339(cond.get("lastTransitionTime"))
    return None
