"""KubeRay's informational metrics, computed from the cache at scrape time.

KubeRay's ``kuberay_cluster_info`` and friends are const gauges collected by listing the CRs when
Prometheus scrapes. We do the same from the informer cache, so a scrape costs no API request and the
series disappear with the object. ``kuberay_cluster_provisioned_duration_seconds`` is derived from
the ``RayClusterProvisioned`` condition's ``lastTransitionTime`` minus ``creationTimestamp``
instead of a gauge set in memory, so the value survives an operator restart (KubeRay's resets).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from controllers import constants as C
from kuberay_py.clock import parse_rfc3339
from kuberay_py.metrics import registry

__all__ = ["KubeRayInfoCollector", "register_info_metrics"]

Lister = Callable[[], Iterable[dict[str, Any]]]


def _condition(obj: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == type_:
            return cond
    return None


def _owner_kind(obj: dict[str, Any]) -> str:
    # KubeRay's value: the ray.io/originated-from-crd label as is, "None" without one (owner
    # references are not read), so KubeRay's dashboards group our clusters the same way.
    labels = (obj.get("metadata") or {}).get("labels") or {}
    origin = labels.get(C.RAY_ORIGINATED_FROM_CRD_LABEL_KEY)
    return "None" if origin is None else str(origin)


def _ids(obj: dict[str, Any]) -> list[str]:
    meta = obj.get("metadata") or {}
    return [str(meta.get("name", "")), str(meta.get("namespace", "")), str(meta.get("uid", ""))]


def _condition_value(obj: dict[str, Any], type_: str) -> str:
    cond = _condition(obj, type_)
    return "true" if cond is not None and cond.get("status") == "True" else "false"


class KubeRayInfoCollector(Collector):
    """Yields KubeRay's const gauges for whatever the listers return at scrape time."""

    def __init__(self, list_clusters: Lister, list_services: Lister) -> None:
        self._list_clusters = list_clusters
        self._list_services = list_services

    def collect(self) -> Iterator[GaugeMetricFamily]:
        ids = ["name", "namespace", "uid"]
        cluster_info = GaugeMetricFamily(
            "kuberay_cluster_info",
            "Metadata information about RayCluster custom resources",
            labels=[*ids, "owner_kind"],
        )
        provisioned = GaugeMetricFamily(
            "kuberay_cluster_condition_provisioned",
            "Indicates whether the RayCluster is provisioned",
            labels=[*ids, "condition"],
        )
        provisioned_duration = GaugeMetricFamily(
            "kuberay_cluster_provisioned_duration_seconds",
            "The time, in seconds, when a RayCluster's RayClusterProvisioned status transitions "
            "from false to true",
            labels=ids,
        )
        for cluster in self._list_clusters():
            labels = _ids(cluster)
            cluster_info.add_metric([*labels, _owner_kind(cluster)], 1)
            state = _condition_value(cluster, "RayClusterProvisioned")
            provisioned.add_metric([*labels, state], 1)
            cond = _condition(cluster, "RayClusterProvisioned")
            created = parse_rfc3339((cluster.get("metadata") or {}).get("creationTimestamp"))
            became = parse_rfc3339(cond.get("lastTransitionTime")) if cond else None
            if state == "true" and created and became:
                provisioned_duration.add_metric(labels, max(0.0, (became - created).total_seconds()))

        service_info = GaugeMetricFamily(
            "kuberay_service_info",
            "Metadata information about RayService custom resources",
            labels=ids,
        )
        ready = GaugeMetricFamily(
            "kuberay_service_condition_ready",
            "Describes whether the RayService is ready",
            labels=[*ids, "condition"],
        )
        upgrading = GaugeMetricFamily(
            "kuberay_service_condition_upgrade_in_progress",
            "Describes whether the RayService is performing a zero-downtime upgrade",
            labels=[*ids, "condition"],
        )
        # kuberay-py only: an incremental upgrade's progress per cluster (status.*ServiceStatus).
        traffic = GaugeMetricFamily(
            "kuberay_service_traffic_routed_percent",
            "Share of a RayService's traffic routed to its active or pending RayCluster: the HTTPRoute "
            "weight during an incremental upgrade, otherwise 100 for the active and 0 for the pending",
            labels=[*ids, "role", "ray_cluster"],
        )
        capacity = GaugeMetricFamily(
            "kuberay_service_target_capacity_percent",
            "Serve target_capacity of a RayService's active or pending RayCluster: set step by step "
            "during an incremental upgrade, otherwise 100 (Serve's default: full capacity)",
            labels=[*ids, "role", "ray_cluster"],
        )
        for service in self._list_services():
            labels = _ids(service)
            service_info.add_metric(labels, 1)
            ready.add_metric([*labels, _condition_value(service, "Ready")], 1)
            upgrading.add_metric([*labels, _condition_value(service, "UpgradeInProgress")], 1)
            status = service.get("status") or {}
            for role, key in (("active", "activeServiceStatus"), ("pending", "pendingServiceStatus")):
                sub = status.get(key) or {}
                name = sub.get("rayClusterName")
                if not name:
                    continue
                # Outside an incremental upgrade the status carries neither field: the active
                # cluster then takes all traffic at Serve's default full capacity and a pending
                # (blue/green) cluster none until the switch, so the per-cluster panels always
                # show where traffic goes, not only mid-upgrade.
                routed = sub.get("trafficRoutedPercent")
                target = sub.get("targetCapacity")
                traffic.add_metric(
                    [*labels, role, name],
                    routed if isinstance(routed, int) else (100 if role == "active" else 0),
                )
                capacity.add_metric([*labels, role, name], target if isinstance(target, int) else 100)
        yield from (
            cluster_info,
            provisioned,
            provisioned_duration,
            service_info,
            ready,
            upgrading,
            traffic,
            capacity,
        )


def register_info_metrics(list_clusters: Lister, list_services: Lister) -> Callable[[], None]:
    """Register a collector on the shared registry; returns the function that unregisters it."""
    collector = KubeRayInfoCollector(list_clusters, list_services)
    registry.register(collector)
    return lambda: registry.unregister(collector)
