import copy

import pytest

from controllers import constants as c
from controllers.rayservice.cluster import build_ray_cluster
from controllers.rayservice.hashing import (
    is_zero_downtime_enabled,
    should_prepare_new_cluster,
    should_update_cluster,
    spec_hash,
)


def cluster_spec(svc):
    return svc["spec"]["rayClusterConfig"]


def test_hash_is_kuberay_shaped_and_stable(sample_service) -> None:
    h = spec_hash(cluster_spec(sample_service))
    assert len(h) == 32 and h == h.upper()
    assert spec_hash(copy.deepcopy(cluster_spec(sample_service))) == h


@pytest.mark.parametrize(
    "mutate",
    [
        lambda s: s["workerGroupSpecs"][0].update(replicas=4),
        lambda s: s["workerGroupSpecs"][0].update(minReplicas=0, maxReplicas=9),
        lambda s: s["workerGroupSpecs"][0].update(scaleStrategy={"workersToDelete": ["w-1"]}),
        lambda s: s["workerGroupSpecs"][0]["template"]["spec"].update(tolerations=[{"key": "gpu"}]),
        lambda s: s["workerGroupSpecs"][0]["template"]["spec"].update(schedulingGates=[{"name": "g"}]),
        lambda s: s["headGroupSpec"]["template"]["spec"].update(tolerations=[{"key": "gpu"}]),
        lambda s: s.update(suspend=True),
        lambda s: s.update(upgradeStrategy={"type": "Recreate"}),
        lambda s: s["headGroupSpec"].update(rayStartParams={}),  # {} == absent
    ],
)
def test_muted_fields_do_not_change_the_hash(sample_service, mutate) -> None:
    before = spec_hash(cluster_spec(sample_service))
    mutate(cluster_spec(sample_service))
    assert spec_hash(cluster_spec(sample_service)) == before


@pytest.mark.parametrize(
    "mutate",
    [
        lambda s: s.update(rayVersion="2.60.0"),
        lambda s: s["headGroupSpec"]["template"]["spec"]["containers"][0].update(
            image="rayproject/ray:2.60.0"
        ),
        lambda s: s["workerGroupSpecs"][0].update(groupName="other"),
        lambda s: s["headGroupSpec"].update(rayStartParams={"num-cpus": "0"}),
    ],
)
def test_real_changes_change_the_hash(sample_service, mutate) -> None:
    before = spec_hash(cluster_spec(sample_service))
    mutate(cluster_spec(sample_service))
    assert spec_hash(cluster_spec(sample_service)) != before


def test_hash_does_not_mutate_its_input(sample_service) -> None:
    spec = cluster_spec(sample_service)
    spec["workerGroupSpecs"][0]["replicas"] = 3
    original = copy.deepcopy(spec)
    spec_hash(spec)
    assert spec == original


def live(svc, name="svc-abcde"):
    return build_ray_cluster(svc, name)


def test_first_cluster_is_prepared(sample_service) -> None:
    goal = cluster_spec(sample_service)
    assert should_prepare_new_cluster(None, None, goal, pending_is_serving=False, zero_downtime=True)
    assert should_prepare_new_cluster(None, None, goal, pending_is_serving=False, zero_downtime=False)


def test_replica_only_change_triggers_nothing(sample_service) -> None:
    active = live(sample_service)
    cluster_spec(sample_service)["workerGroupSpecs"][0]["replicas"] = 5
    goal = cluster_spec(sample_service)
    assert not should_prepare_new_cluster(active, None, goal, pending_is_serving=False, zero_downtime=True)
    assert not should_update_cluster(active, goal, is_active=True, upgrade_in_progress=False)


def test_spec_change_prepares_a_new_cluster_only_with_zero_downtime(sample_service) -> None:
    active = live(sample_service)
    cluster_spec(sample_service)["rayVersion"] = "2.60.0"
    goal = cluster_spec(sample_service)
    assert should_prepare_new_cluster(active, None, goal, pending_is_serving=False, zero_downtime=True)
    assert not should_prepare_new_cluster(active, None, goal, pending_is_serving=False, zero_downtime=False)
    assert not should_update_cluster(active, goal, is_active=True, upgrade_in_progress=False)


def test_a_change_while_pending_compares_with_the_pending_cluster(sample_service) -> None:
    active = live(sample_service, "svc-old00")
    cluster_spec(sample_service)["rayVersion"] = "2.60.0"
    pending = live(sample_service, "svc-new00")
    goal = cluster_spec(sample_service)
    assert not should_prepare_new_cluster(active, pending, goal, pending_is_serving=False, zero_downtime=True)
    cluster_spec(sample_service)["rayVersion"] = "2.61.0"
    assert should_prepare_new_cluster(active, pending, goal, pending_is_serving=False, zero_downtime=True)
    assert not should_prepare_new_cluster(active, pending, goal, pending_is_serving=True, zero_downtime=True)


def test_appended_worker_group_updates_in_place(sample_service) -> None:
    active = live(sample_service)
    group = copy.deepcopy(cluster_spec(sample_service)["workerGroupSpecs"][0])
    group["groupName"] = "extra"
    cluster_spec(sample_service)["workerGroupSpecs"].append(group)
    goal = cluster_spec(sample_service)
    assert not should_prepare_new_cluster(active, None, goal, pending_is_serving=False, zero_downtime=True)
    assert should_update_cluster(active, goal, is_active=True, upgrade_in_progress=False)
    assert not should_update_cluster(active, goal, is_active=True, upgrade_in_progress=True)
    assert should_update_cluster(active, goal, is_active=False, upgrade_in_progress=True)


def test_removed_worker_group_is_not_an_in_place_update(sample_service) -> None:
    active = live(sample_service)
    cluster_spec(sample_service)["workerGroupSpecs"] = []
    goal = cluster_spec(sample_service)
    assert not should_update_cluster(active, goal, is_active=True, upgrade_in_progress=False)
    assert should_prepare_new_cluster(active, None, goal, pending_is_serving=False, zero_downtime=True)


def test_other_operator_version_restamps_the_active_cluster(sample_service) -> None:
    active = live(sample_service)
    active["metadata"]["annotations"][c.KUBERAY_VERSION_KEY] = "v1.1.0"
    goal = cluster_spec(sample_service)
    assert should_update_cluster(active, goal, is_active=True, upgrade_in_progress=False)
    assert not should_update_cluster(active, goal, is_active=False, upgrade_in_progress=False)


@pytest.mark.parametrize(
    ("strategy", "env", "expected"),
    [
        (None, {}, True),
        (None, {"ENABLE_ZERO_DOWNTIME": "false"}, False),
        (None, {"ENABLE_ZERO_DOWNTIME": "False"}, False),
        (None, {"ENABLE_ZERO_DOWNTIME": "no"}, True),
        ("NewCluster", {"ENABLE_ZERO_DOWNTIME": "false"}, True),
        ("None", {}, False),
    ],
)
def test_zero_downtime_switch(strategy, env, expected) -> None:
    spec = {"upgradeStrategy": {"type": strategy}} if strategy else {}
    assert is_zero_downtime_enabled(spec, env) is expected
