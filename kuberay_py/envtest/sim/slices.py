"""What a Service's EndpointSlices should contain (``pkg/controller/endpointslice``), as pure functions.

A Pod is an endpoint of a Service when the Service's selector matches it, it has an address and it
is not in a terminal phase. Terminating Pods stay listed with ``terminating: true`` and
``ready: false`` (``serving`` keeps the Pod's readiness), which is what lets proxies drain them.
Each Service port's ``targetPort`` is resolved against the Pod's own container ports, so a named
port (``serve``) can mean 8000 on one Pod and 9000 on another; endpoints that resolve to different
port sets go into different slices, exactly as the upstream controller groups them.
"""

from __future__ import annotations

from typing import Any

from kuberay_py.envtest.sim.membership import find_port, pod_in_endpoints, pod_ready, selector_matches

__all__ = [
    "MANAGED_BY",
    "MANAGED_BY_LABEL",
    "MAX_ENDPOINTS_PER_SLICE",
    "SERVICE_NAME_LABEL",
    "desired_slices",
    "endpoint_for",
    "endpoint_ports",
    "slice_labels",
]

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY = "endpointslice-controller.k8s.io"
MAX_ENDPOINTS_PER_SLICE = 100  # kube-controller-manager's --max-endpoints-per-slice default

PortKey = tuple[tuple[str, int, str, str], ...]


def endpoint_ports(service: dict[str, Any], pod: dict[str, Any]) -> list[dict[str, Any]]:
    """The slice ports for one Pod; a Service port whose named targetPort the Pod lacks is skipped."""
    ports: list[dict[str, Any]] = []
    for sp in (service.get("spec") or {}).get("ports") or []:
        protocol = sp.get("protocol", "TCP")
        number = find_port(pod, sp.get("targetPort", sp.get("port")), protocol)
        if number is None:
            continue
        port: dict[str, Any] = {"name": sp.get("name", ""), "port": number, "protocol": protocol}
        if sp.get("appProtocol"):
            port["appProtocol"] = sp["appProtocol"]
        ports.append(port)
    return ports


def endpoint_for(service: dict[str, Any], pod: dict[str, Any]) -> dict[str, Any] | None:
    """The endpoint for ``pod``, or None when the Pod must not be listed."""
    status = pod.get("status") or {}
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    ip = status.get("podIP")
    if not ip or not pod_in_endpoints(pod, include_terminating=True):
        return None
    publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    ready = publish or pod_ready(pod)
    terminating = bool(meta.get("deletionTimestamp"))
    endpoint: dict[str, Any] = {
        "addresses": [ip],
        "conditions": {"ready": ready and not terminating, "serving": ready, "terminating": terminating},
        "targetRef": {
            "kind": "Pod",
            "namespace": meta.get("namespace", ""),
            "name": meta.get("name", ""),
            "uid": meta.get("uid", ""),
        },
    }
    if spec.get("nodeName"):
        endpoint["nodeName"] = spec["nodeName"]
    svc_name = (service.get("metadata") or {}).get("name")
    if spec.get("hostname") and spec.get("subdomain") == svc_name:
        endpoint["hostname"] = spec["hostname"]
    return endpoint


def desired_slices(
    service: dict[str, Any], pods: list[dict[str, Any]]
) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """(ports, endpoints) per slice. A Service with no endpoints keeps one empty placeholder slice."""
    selector = (service.get("spec") or {}).get("selector") or {}
    groups: dict[PortKey, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for pod in sorted(pods, key=lambda p: p.get("metadata", {}).get("name", "")):
        if not selector_matches(selector, pod.get("metadata", {}).get("labels")):
            continue
        endpoint = endpoint_for(service, pod)
        if endpoint is None:
            continue
        ports = endpoint_ports(service, pod)
        key: PortKey = tuple((p["name"], p["port"], p["protocol"], p.get("appProtocol", "")) for p in ports)
        groups.setdefault(key, (ports, []))[1].append(endpoint)
    result: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
    for ports, endpoints in groups.values():
        for i in range(0, len(endpoints), MAX_ENDPOINTS_PER_SLICE):
            result.append((ports, endpoints[i : i + MAX_ENDPOINTS_PER_SLICE]))
    if not result:
        result.append(([], []))
    return result


def slice_labels(service: dict[str, Any]) -> dict[str, str]:
    """The Service's labels plus the two the controller owns (``getEndpointSliceLabels``)."""
    meta = service.get("metadata") or {}
    labels = {
        k: v
        for k, v in (meta.get("labels") or {}).items()
        if k not in (SERVICE_NAME_LABEL, MANAGED_BY_LABEL, "service.kubernetes.io/headless")
    }
    if (service.get("spec") or {}).get("clusterIP") == "None":
        labels["service.kubernetes.io/headless"] = ""
    labels[SERVICE_NAME_LABEL] = meta.get("name", "")
    labels[MANAGED_BY_LABEL] = MANAGED_BY
    return labels
