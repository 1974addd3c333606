"""Pure parts of the batch schedulers; expected values derived from v1.7.0 source and unit tests
(volcano_scheduler_test.go, yunikorn_scheduler_test.go, scheduler_plugins_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.batchscheduler import resources as R
from controllers.batchscheduler import volcano, yunikorn
from controllers.batchscheduler.base import SchedulerError
from controllers.rayjob.builders import submitter_pod_spec
from tests.integration.batchscheduler.test_batch_schedulers import cluster_spec


def _cluster(labels: dict[str, str] | None = None, hosts: int = 1) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "raycluster-sample",
            "namespace": "default",
            "uid": "u1",
            "labels": labels or {},
        },
        "spec": cluster_spec(hosts=hosts),
    }


def test_volcano_multi_host_sizes() -> None:
    members, res = volcano.pod_group_size(cluster_spec(hosts=2))
    assert members == 5
    assert R.render(res) == {"cpu": "1280m", "memory": "1280Mi", "nvidia.com/gpu": "4"}


def test_volcano_autoscaling_uses_minimums() -> None:
    spec = cluster_spec() | {"enableInTreeAutoscaling": True}
    members, res = volcano.pod_group_size(spec)
    assert members == 2
    assert R.render(res) == {"cpu": "512m", "memory": "512Mi", "nvidia.com/gpu": "1"}


def test_volcano_network_topology_labels() -> None:
    labels = {volcano.TOPOLOGY_MODE_LABEL: "soft", volcano.TOPOLOGY_TIER_LABEL: "3"}
    pg = volcano.pod_group(_cluster(labels), "RayCluster", 3, {})
    assert pg["spec"]["networkTopology"] == {"mode": "soft", "highestTierAllowed": 3}
    hard = volcano.pod_group(_cluster({volcano.TOPOLOGY_MODE_LABEL: "hard"}), "RayCluster", 3, {})
    assert hard["spec"]["networkTopology"] == {"mode": "hard"}
    with pytest.raises(SchedulerError, match="failed to convert"):
        volcano.pod_group(_cluster(labels | {volcano.TOPOLOGY_TIER_LABEL: "x"}), "RayCluster", 3, {})


def test_volcano_pod_group_name_follows_the_rayjob() -> None:
    cluster = _cluster({"ray.io/originated-from-crd": "RayJob", "ray.io/originated-from-cr-name": "job-a"})
    assert volcano.pod_group_name(cluster) == "ray-job-a-pg"
    assert volcano.pod_group_name(_cluster()) == "ray-raycluster-sample-pg"


def test_yunikorn_rayjob_task_groups_add_the_submitter() -> None:
    job = {
        "metadata": {"name": "job", "namespace": "default", "uid": "u2"},
        "spec": {"entrypoint": "python x.py", "rayClusterSpec": cluster_spec(gpu=False)},
    }
    groups = yunikorn.task_groups(job, "RayJob", submitter_pod_spec)
    assert [(g["name"], g["minMember"]) for g in groups] == [
        ("headgroup", 1),
        ("workers", 1),
        ("submittergroup", 1),
    ]
    assert groups[2]["minResource"] == {"cpu": "500m", "memory": "200Mi"}


def test_yunikorn_without_gang_label_copies_labels_only() -> None:
    parent = _cluster({yunikorn.APP_ID_LABEL: "app", yunikorn.QUEUE_LABEL: "root.q"})
    pod: dict[str, Any] = {"kind": "Pod", "metadata": {"labels": {}}, "spec": {}}
    yunikorn.YuniKorn(submitter_pod_spec).add_metadata(parent, "RayCluster", pod, "workers")
    assert pod["metadata"]["labels"] == {"applicationId": "app", "queue": "root.q"}
    assert "annotations" not in pod["metadata"]
    assert pod["spec"]["schedulerName"] == "yunikorn"
