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


def test_owner_kind_is_the_originated_from_crd_label_as_kuberay_reads_it() -> None:
    # KubeRay takes the label's value as is and never reads owner references.
    owned = _cluster("c", True)
    owned["metadata"]["ownerReferences"] = [{"kind": "RayService", "name": "rs", "controller": True}]
    cron = _cluster("d", True, "RayCronJob")
    text = _scrape([owned, cron], [])
    assert 'kuberay_cluster_info{name="c",namespace="ns",owner_kind="None",uid="uid-c"} 1.0' in text
    assert 'kuberay_cluster_info{name="d",namespace="ns",owner_kind="RayCronJob",uid="uid-d"} 1.0' in text


def test_job_series_carry_the_deployment_status_as_kuberay_does() -> None:
    from controllers.rayjob.metrics import register_job_metrics
    from kuberay_py.metrics import registry

    jobs = [
        {"metadata": {"name": "new", "namespace": "ns", "uid": "u1"}},
        {
            "metadata": {"name": "run", "namespace": "ns", "uid": "u2"},
            "status": {"jobDeploymentStatus": "Running"},
        },
    ]
    unregister = register_job_metrics(lambda: jobs)
    try:
        get = registry.get_sample_value
        assert get("kuberay_job_info", {"name": "new", "namespace": "ns", "uid": "u1"}) == 1
        # A new RayJob has no status yet: KubeRay's label value is empty, not "New".
        new = {"name": "new", "namespace": "ns", "uid": "u1", "deployment_status": ""}
        assert get("kuberay_job_deployment_status", new) == 1
        run = {"name": "run", "namespace": "ns", "uid": "u2", "deployment_status": "Running"}
        assert get("kuberay_job_deployment_status", run) == 1
    finally:
        unregister()
    gone = registry.get_sample_value("kuberay_job_info", {"name": "new", "namespace": "ns", "uid": "u1"})
    assert gone is None
