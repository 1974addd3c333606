from typing import Any

from prometheus_client import CollectorRegistry, generate_latest

from controllers.metrics import KubeRayInfoCollector


def _cluster(name: str, provisioned: bool, owner: str | None = None) -> dict[str, Any]:
    labels = {"ray.io/originated-from-crd": owner} if owner else {}
    conds = [
        {
            "type": "RayClusterProvisioned",
            "status": "True" if provisioned else "False",
            "lastTransitionTime": "2026-01-01T00:01:30Z",
        }
    ]
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "labels": labels,
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "status": {"conditions": conds},
    }


def _scrape(clusters: list[dict[str, Any]], services: list[dict[str, Any]]) -> str:
    reg = CollectorRegistry()
    reg.register(KubeRayInfoCollector(lambda: clusters, lambda: services))
    return generate_latest(reg).decode()


def test_cluster_metrics_carry_kuberays_labels_and_derived_provisioning_time() -> None:
    text = _scrape([_cluster("a", True, "RayService"), _cluster("b", False)], [])
    assert 'kuberay_cluster_info{name="a",namespace="ns",owner_kind="RayService",uid="uid-a"} 1.0' in text
    assert 'kuberay_cluster_info{name="b",namespace="ns",owner_kind="None",uid="uid-b"} 1.0' in text
    prov = "kuberay_cluster_condition_provisioned"
    assert prov + '{condition="true",name="a",namespace="ns",uid="uid-a"}' in text
    assert prov + '{condition="false",name="b",namespace="ns",uid="uid-b"}' in text
    assert 'kuberay_cluster_provisioned_duration_seconds{name="a",namespace="ns",uid="uid-a"} 90.0' in text
    assert 'kuberay_cluster_provisioned_duration_seconds{name="b"' not in text


def test_service_metrics_follow_conditions_and_vanish_with_the_object() -> None:
    svc = {
        "metadata": {"name": "s", "namespace": "ns", "uid": "u"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    text = _scrape([], [svc])
    assert 'kuberay_service_condition_ready{condition="true",name="s",namespace="ns",uid="u"} 1.0' in text
    assert (
        'kuberay_service_condition_upgrade_in_progress{condition="false",name="s",namespace="ns",uid="u"} 1.0'
        in text
    )
    assert 'name="s"' not in _scrape([], [])


def test_incremental_upgrade_progress_per_cluster() -> None:
    """Traffic share and target_capacity of both clusters, from the RayService's status."""
    from prometheus_client import CollectorRegistry

    from controllers.metrics import KubeRayInfoCollector

    service = {
        "metadata": {"name": "rs", "namespace": "ns", "uid": "u"},
        "status": {
            "activeServiceStatus": {
                "rayClusterName": "rs-a",
                "trafficRoutedPercent": 75,
                "targetCapacity": 100,
            },
            "pendingServiceStatus": {
                "rayClusterName": "rs-b",
                "trafficRoutedPercent": 25,
                "targetCapacity": 50,
            },
        },
    }
    registry = CollectorRegistry()
    registry.register(KubeRayInfoCollector(list, lambda: [service]))
    labels = {"name": "rs", "namespace": "ns", "uid": "u"}
    get = registry.get_sample_value
    assert (
        get("kuberay_service_traffic_routed_percent", {**labels, "role": "active", "ray_cluster": "rs-a"})
        == 75
    )
    assert (
        get("kuberay_service_traffic_routed_percent", {**labels, "role": "pending", "ray_cluster": "rs-b"})
        == 25
    )
    assert (
        get("kuberay_service_target_capacity_percent", {**labels, "role": "pending", "ray_cluster": "rs-b"})
        == 50
    )


def test_cluster_shares_outside_an_incremental_upgrade() -> None:
    """Without the incremental fields the active cluster has all traffic, a blue/green pending none."""
    from prometheus_client import CollectorRegistry

    from controllers.metrics import KubeRayInfoCollector

    service = {
        "metadata": {"name": "rs", "namespace": "ns", "uid": "u"},
        "status": {
            "activeServiceStatus": {"rayClusterName": "rs-a"},
            "pendingServiceStatus": {"rayClusterName": "rs-b"},
        },
    }
    registry = CollectorRegistry()
    registry.register(KubeRayInfoCollector(list, lambda: [service]))
    labels = {"name": "rs", "namespace": "ns", "uid": "u"}
    get = registry.get_sample_value
    active = {**labels, "role": "active", "ray_cluster": "rs-a"}
    pending = {**labels, "role": "pending", "ray_cluster": "rs-b"}
    assert get("kuberay_service_traffic_routed_percent", active) == 100
    assert get("kuberay_service_traffic_routed_percent", pending) == 0
    assert get("kuberay_service_target_capacity_percent", active) == 100
    assert get("kuberay_service_target_capacity_percent", pending) == 100
