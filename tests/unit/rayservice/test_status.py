from datetime import UTC, datetime, timedelta

from controllers.ray.serve_status import AppStatus, DeploymentStatus, ServeDetails
from controllers.rayservice.serve import ServeConfigCache, application_statuses, needs_submit
from controllers.rayservice.status import (
    calculate_conditions,
    find_condition,
    kuberay_status_shape,
    ready_endpoint_pod_uids,
    status_differs,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def endpoint(uid, ready, ip="127.0.0.2"):
    return {
        "addresses": [ip],
        "conditions": {"ready": ready},
        "targetRef": {"kind": "Pod", "uid": uid, "name": uid},
    }


def test_endpoints_counted_by_unique_ready_pod_uid() -> None:
    slices = [
        {"endpoints": [endpoint("a", True), endpoint("b", False), endpoint("c", True)]},
        {
            "endpoints": [
                endpoint("a", True, "::1"),
                {"addresses": ["1.1.1.1"], "conditions": {"ready": True}},
            ]
        },
        {"endpoints": None},
    ]
    assert set(ready_endpoint_pod_uids(slices)) == {"a", "c"}


def test_conditions_initialise_then_follow_endpoints() -> None:
    status: dict = {"numServeEndpoints": 0}
    calculate_conditions(status, generation=1, now=T0)
    ready = find_condition(status["conditions"], "Ready")
    upgrade = find_condition(status["conditions"], "UpgradeInProgress")
    assert (ready["status"], ready["reason"]) == ("False", "Initializing")
    assert (upgrade["status"], upgrade["reason"]) == ("False", "Initializing")
    assert status["serviceStatus"] == ""

    status["activeServiceStatus"] = {"rayClusterName": "svc-a"}
    status["numServeEndpoints"] = 2
    calculate_conditions(status, generation=1, now=T0 + timedelta(seconds=5))
    ready = find_condition(status["conditions"], "Ready")
    assert (ready["status"], ready["reason"]) == ("True", "NonZeroServeEndpoints")
    assert ready["lastTransitionTime"] == "2026-01-01T00:00:05Z"
    assert find_condition(status["conditions"], "UpgradeInProgress")["reason"] == "NoPendingCluster"
    assert status["serviceStatus"] == "Running"

    status["pendingServiceStatus"] = {"rayClusterName": "svc-b"}
    status["numServeEndpoints"] = 3
    calculate_conditions(status, generation=2, now=T0 + timedelta(seconds=9))
    ready = find_condition(status["conditions"], "Ready")
    assert ready["lastTransitionTime"] == "2026-01-01T00:00:05Z"  # status unchanged: time kept
    assert ready["observedGeneration"] == 2
    upgrade = find_condition(status["conditions"], "UpgradeInProgress")
    assert (upgrade["status"], upgrade["reason"]) == ("True", "BothActivePendingClustersExist")

    status["numServeEndpoints"] = 0
    calculate_conditions(status, generation=2, now=T0 + timedelta(seconds=10))
    ready = find_condition(status["conditions"], "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ZeroServeEndpoints")
    assert status["serviceStatus"] == ""


def test_status_write_only_on_meaningful_change() -> None:
    base = {
        "numServeEndpoints": 1,
        "serviceStatus": "Running",
        "activeServiceStatus": {"rayClusterName": "a", "rayClusterStatus": {"state": "ready"}},
        "conditions": [{"type": "Ready", "status": "True", "reason": "X", "lastTransitionTime": "t1"}],
        "lastUpdateTime": "t1",
    }
    same = {
        "numServeEndpoints": 1,
        "serviceStatus": "Running",
        "activeServiceStatus": {"rayClusterName": "a", "rayClusterStatus": {"state": "other"}},
        "pendingServiceStatus": {},
        "conditions": [{"type": "Ready", "status": "True", "reason": "X", "lastTransitionTime": "t2"}],
        "lastUpdateTime": "t2",
    }
    assert not status_differs(base, same)
    assert status_differs(base, {**same, "numServeEndpoints": 2})
    assert status_differs(base, {**same, "pendingServiceStatus": {"rayClusterName": "b"}})
    apps = {"app": {"status": "RUNNING", "message": "", "serveDeploymentStatuses": {}}}
    assert status_differs(
        base, {**same, "activeServiceStatus": {"rayClusterName": "a", "applicationStatuses": apps}}
    )


def test_application_statuses_shape_and_default_name() -> None:
    details = ServeDetails(
        applications={
            "": AppStatus("RUNNING", "", {"D": DeploymentStatus("HEALTHY", "")}),
            "bad": AppStatus("DEPLOY_FAILED", "ModuleNotFoundError", {}),
        }
    )
    assert application_statuses(details) == {
        "default": {
            "status": "RUNNING",
            "message": "",
            "serveDeploymentStatuses": {"D": {"status": "HEALTHY", "message": ""}},
        },
        "bad": {"status": "DEPLOY_FAILED", "message": "ModuleNotFoundError", "serveDeploymentStatuses": {}},
    }


def test_needs_submit_rules() -> None:
    running = ServeDetails(applications={"a": AppStatus("RUNNING")})
    empty = ServeDetails(applications={})
    assert needs_submit("", "cfg", running)[0]  # nothing submitted by this process (restart)
    assert needs_submit("cfg", "cfg", empty)[0]  # head restarted without GCS FT
    assert needs_submit("old", "cfg", running)[0]  # config changed
    assert not needs_submit("cfg", "cfg", running)[0]


def test_serve_config_cache_is_bounded_and_prunable() -> None:
    cache = ServeConfigCache(max_services=2)
    cache.put("ns/a", "a-1", "x")
    cache.put("ns/a", "a-2", "y")
    cache.put("ns/b", "b-1", "z")
    assert cache.get("ns/a", "a-1") == "x"  # touches ns/a
    cache.put("ns/c", "c-1", "w")  # evicts the least recently used: ns/b
    assert cache.get("ns/b", "b-1") == ""
    cache.retain("ns/a", {"a-2"})
    assert (cache.get("ns/a", "a-1"), cache.get("ns/a", "a-2")) == ("", "y")
    assert len(cache) == 2


def test_idle_refresh_is_spread_and_stable_per_rayservice() -> None:
    from controllers.rayservice.reconciler import refresh_delay

    delays = [refresh_delay(f"ns/svc-{i}", 300.0) for i in range(200)]
    assert all(270.0 <= d <= 300.0 for d in delays)
    assert len({round(d, 1) for d in delays}) > 100  # not all in the same second
    assert refresh_delay("ns/svc-1", 300.0) == delays[1]


def test_kuberay_status_shape_omits_zero_fields_and_keeps_go_structs() -> None:
    status = {
        "serviceStatus": "",
        "numServeEndpoints": 0,
        "pendingServiceStatus": {"rayClusterName": "rs-abcde"},
        "conditions": [],
    }
    shaped = kuberay_status_shape(status)
    zero = {"desiredCPU": "0", "desiredGPU": "0", "desiredMemory": "0", "desiredTPU": "0", "head": {}}
    assert shaped == {
        "activeServiceStatus": {"rayClusterStatus": zero},
        "pendingServiceStatus": {"rayClusterName": "rs-abcde", "rayClusterStatus": zero},
        "conditions": [],
    }
    assert status["serviceStatus"] == "" and "rayClusterStatus" not in status["pendingServiceStatus"]
    copied = {"desiredCPU": "2500m", "head": {"podName": "p"}}
    running = {
        "serviceStatus": "Running",
        "numServeEndpoints": 2,
        "activeServiceStatus": {"rayClusterStatus": copied},
    }
    shaped = kuberay_status_shape(running)
    assert shaped["serviceStatus"] == "Running" and shaped["numServeEndpoints"] == 2
    assert shaped["activeServiceStatus"]["rayClusterStatus"]["desiredCPU"] == "2500m"
    assert shaped["activeServiceStatus"]["rayClusterStatus"]["desiredGPU"] == "0"


def test_shaping_alone_is_not_a_status_change() -> None:
    status = {"serviceStatus": "", "numServeEndpoints": 0, "conditions": []}
    assert not status_differs(kuberay_status_shape(status), status)
    assert status_differs(kuberay_status_shape(status), {**status, "numServeEndpoints": 1})
