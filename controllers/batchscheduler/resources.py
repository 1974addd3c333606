"""Resource sums the gang schedulers put into their PodGroups, as KubeRay v1.7.0's utils compute them.

A PodGroup's ``minResources`` is a ``ResourceList``: each value is a summed ``resource.Quantity``,
printed in its canonical form (``768m``, ``1280Mi``), and the schedulers compare these strings,
so the sums keep apimachinery's rules: a container's requests win over its limits, and a sum keeps
the format of its first term.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from controllers.common.quantity import Format, QuantityError, format_quantity, parse_with_format

__all__ = [
    "ResourceSum",
    "desired_replicas",
    "desired_resources",
    "min_replicas",
    "min_resources",
    "pod_resources",
    "render",
    "sum_resources",
]

#: name -> (value, format of the first term)
ResourceSum = dict[str, tuple[Decimal, Format]]


def _add(total: ResourceSum, name: str, value: Decimal, fmt: Format) -> None:
    prev = total.get(name)
    total[name] = (prev[0] + value, prev[1]) if prev else (value, fmt)


def container_resources(container: dict[str, Any]) -> ResourceSum:
    """Requests, with limits filling names that have no request."""
    resources = container.get("resources") or {}
    merged = dict(resources.get("limits") or {})
    merged.update(resources.get("requests") or {})
    out: ResourceSum = {}
    for name, raw in merged.items():
        try:
            value, fmt = parse_with_format(raw)
        except QuantityError:
            continue
        _add(out, name, value, fmt)
    return out


def pod_resources(pod_spec: dict[str, Any]) -> ResourceSum:
    """KubeRay's ``CalculatePodResource``: the containers' resources summed (init containers not)."""
    out: ResourceSum = {}
    for container in pod_spec.get("containers") or []:
        for name, (value, fmt) in container_resources(container).items():
            _add(out, name, value, fmt)
    return out


def sum_resources(*parts: ResourceSum) -> ResourceSum:
    out: ResourceSum = {}
    for part in parts:
        for name, (value, fmt) in part.items():
            _add(out, name, value, fmt)
    return out


def _times(res: ResourceSum, n: int) -> ResourceSum:
    return {name: (value * n, fmt) for name, (value, fmt) in res.items()}


def _hosts(group: dict[str, Any]) -> int:
    return int(group.get("numOfHosts") or 1)


def _template_spec(group: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = (group.get("template") or {}).get("spec") or {}
    return spec


def _group_desired(group: dict[str, Any]) -> int:
    """``GetWorkerGroupDesiredReplicas``: replicas clamped to [min, max], times numOfHosts."""
    if group.get("suspend"):
        return 0
    low = int(group.get("minReplicas") or 0)
    high = group.get("maxReplicas")
    replicas = group.get("replicas")
    if replicas is None or int(replicas) < low:
        count = low
    elif high is not None and int(replicas) > int(high):
        count = int(high)
    else:
        count = int(replicas)
    return count * _hosts(group)


def desired_replicas(cluster_spec: dict[str, Any]) -> int:
    return sum(_group_desired(g) for g in cluster_spec.get("workerGroupSpecs") or [])


def min_replicas(cluster_spec: dict[str, Any]) -> int:
    return sum(
        int(g.get("minReplicas") or 0) * _hosts(g)
        for g in cluster_spec.get("workerGroupSpecs") or []
        if not g.get("suspend")
    )


def _cluster_resources(cluster_spec: dict[str, Any], count_field: str) -> ResourceSum:
    head = pod_resources(_template_spec(cluster_spec.get("headGroupSpec") or {}))
    parts = [head]
    for group in cluster_spec.get("workerGroupSpecs") or []:
        if group.get("suspend"):
            continue
        # KubeRay multiplies by the raw field here (not the clamped count desired_replicas uses).
        count = int(group.get(count_field) or 0) * _hosts(group)
        parts.append(_times(pod_resources(_template_spec(group)), count))
    return sum_resources(*parts)


def desired_resources(cluster_spec: dict[str, Any]) -> ResourceSum:
    """``CalculateDesiredResources``: the head plus ``replicas × numOfHosts`` of each live group."""
    return _cluster_resources(cluster_spec, "replicas")


def min_resources(cluster_spec: dict[str, Any]) -> ResourceSum:
    """``CalculateMinResources``: the head plus ``minReplicas × numOfHosts`` of each live group."""
    return _cluster_resources(cluster_spec, "minReplicas")


def render(res: ResourceSum) -> dict[str, str]:
    """The ``ResourceList`` JSON: canonical quantity strings, names sorted as Go's encoder does."""
    return {name: format_quantity(value, fmt) for name, (value, fmt) in sorted(res.items())}
