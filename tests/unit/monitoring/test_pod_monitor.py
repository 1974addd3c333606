"""The PodMonitors find the Ray Pods the operator builds, on the metrics port it gives them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.pod import build_head_pod, build_worker_pod

ROOT = Path(__file__).resolve().parents[3]


def monitors() -> dict[str, dict[str, Any]]:
    docs = yaml.safe_load_all((ROOT / "config" / "prometheus" / "podmonitor.yaml").read_text())
    return {d["metadata"]["name"]: d for d in docs if d}


def sample_cluster() -> dict[str, Any]:
    [doc] = [
        d
        for d in yaml.safe_load_all((ROOT / "config" / "samples" / "ray-cluster.sample.yaml").read_text())
        if d and d["kind"] == "RayCluster"
    ]
    doc["metadata"].update(namespace="default", uid="u1")
    return dict(doc)


def _selected(monitor: dict[str, Any], pod: dict[str, Any]) -> bool:
    return monitor["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()


def _ports(pod: dict[str, Any]) -> set[str]:
    return {p["name"] for c in pod["spec"]["containers"] for p in c.get("ports") or [] if p.get("name")}


def test_head_and_worker_monitors_select_the_built_pods_on_their_metrics_port() -> None:
    cluster = sample_cluster()
    head = build_head_pod(cluster, RayClusterOptions())
    worker = build_worker_pod(cluster, cluster["spec"]["workerGroupSpecs"][0], RayClusterOptions())
    by_name = monitors()
    head_monitor, worker_monitor = by_name["ray-head-monitor"], by_name["ray-workers-monitor"]
    assert _selected(head_monitor, head) and not _selected(head_monitor, worker)
    assert _selected(worker_monitor, worker) and not _selected(worker_monitor, head)
    assert "metrics" in _ports(head) & _ports(worker)
    for monitor in by_name.values():
        assert monitor["spec"]["namespaceSelector"] == {"any": True}  # every namespace the operator watches
        endpoints = monitor["spec"]["podMetricsEndpoints"]
        assert endpoints[0]["port"] == "metrics"
        for endpoint in endpoints:
            # Ray's dashboards filter on ray_io_cluster, taken from the Pod's ray.io/cluster label.
            [relabel] = endpoint["relabelings"]
            assert relabel["sourceLabels"] == ["__meta_kubernetes_pod_label_ray_io_cluster"]
            assert relabel["targetLabel"] == "ray_io_cluster"
    assert head["metadata"]["labels"]["ray.io/cluster"] == cluster["metadata"]["name"]
