"""Each RayService phase function on an explicit ServiceContext over fakes.

No reconciler is built: a test sets up the cache, the working status and the fakes, calls one
phase, and reads the outcome where a user would see it (requests sent, events, the status).
"""

from __future__ import annotations

import base64
from datetime import timedelta
from typing import Any

import pytest

from controllers import constants as c
from controllers.common.conditions import find_condition
from controllers.common.last_write import load, remember_write
from controllers.common.objects import managed_here
from controllers.ray.dashboard import DashboardHTTPError
from controllers.ray.health import HealthResult
from controllers.rayservice import clusters, lifecycle, serving, suspend, traffic
from controllers.rayservice.cluster import DELETION_DEADLINE_ANNOTATION_KEY, owned_cluster_labels
from controllers.rayservice.options import COND_SERVE_CONFIG_VALID, SERVICE_NAME_LABEL
from controllers.rayservice.services import serve_service_name
from controllers.rayservice.serving import ServeResult
from kuberay_py.client import Forbidden
from kuberay_py.client.resources import ENDPOINTSLICES, PODS, SECRETS, SERVICES
from kuberay_py.clock import format_rfc3339, parse_rfc3339
from kuberay_py.controller import Request
from kuberay_py.metrics import registry
from kuberay_py.objects import Obj
from tests.unit.rayservice.phase_kit import Kit, head_pod, make_kit, owned_cluster, worker_pod

ACTIVE, PENDING = "rayservice-sample-aaaaa", "rayservice-sample-bbbbb"


@pytest.fixture
def svc(samples: Any) -> Obj:
    obj: Obj = samples("ray-service.sample.yaml")
    obj["metadata"]["resourceVersion"] = "10"
    return obj


def tracking(kit: Kit, *, active: str = "", pending: str = "") -> None:
    if active:
        kit.ctx.status["activeServiceStatus"] = {"rayClusterName": active}
    if pending:
        kit.ctx.status["pendingServiceStatus"] = {"rayClusterName": pending}


def condition(kit: Kit, type_: str) -> Obj:
    cond = find_condition(kit.ctx.status.get("conditions"), type_)
    assert cond is not None, f"no {type_} condition in {kit.ctx.status}"
    return dict(cond)


REQ = Request("ns", "rayservice-sample")


# -- lifecycle -----------------------------------------------------------------------------------


def test_load_reads_our_last_write_while_the_cache_predates_it(svc: Obj) -> None:
    kit = make_kit(svc)
    svc["metadata"]["resourceVersion"] = "10"
    kit.cache.put(c.RAYSERVICES, svc)
    memory = kit.ctx.memory
    loaded = load(kit.cache.get(c.RAYSERVICES, REQ.name, REQ.namespace), REQ, memory)
    assert loaded is not None and loaded[0] is svc
    memo = loaded[1]
    ours = {
        **svc,
        "metadata": {**svc["metadata"], "resourceVersion": "11"},
        "status": {"pendingServiceStatus": {"rayClusterName": PENDING}},
    }
    remember_write(memo, svc, ours)
    # the cache still shows the version our write replaced: our write, with no request sent
    assert load(kit.cache.get(c.RAYSERVICES, REQ.name, REQ.namespace), REQ, memory) == (ours, memo)
    assert kit.client.requests == []
    caught_up = {**ours, "metadata": {**ours["metadata"], "resourceVersion": "12"}}
    kit.cache.put(c.RAYSERVICES, caught_up)
    assert load(kit.cache.get(c.RAYSERVICES, REQ.name, REQ.namespace), REQ, memory) == (caught_up, memo)
    assert memo.written is None


def test_another_managed_by_is_left_alone(svc: Obj) -> None:
    assert managed_here(svc)
    svc["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    assert not managed_here(svc)


async def test_the_finalizer_is_added_once(svc: Obj) -> None:
    kit = make_kit(svc)
    await lifecycle.ensure_finalizer(kit.ctx)
    assert kit.ctx.svc["metadata"]["finalizers"] == [c.RAYSERVICE_FINALIZER]
    await lifecycle.ensure_finalizer(kit.ctx)
    assert kit.client.requests == [("update", "RayService", "rayservice-sample")]


async def test_finalize_deletes_the_clusters_first_then_drops_the_finalizer_and_memory(svc: Obj) -> None:
    svc["metadata"]["finalizers"] = [c.RAYSERVICE_FINALIZER, "other"]
    kit = make_kit(svc)
    kit.ctx.memo.warned["X"] = "y"
    kit.cache.put(c.RAYCLUSTERS, owned_cluster(svc, ACTIVE))
    await lifecycle.finalize(kit.ctx)
    assert kit.client.requests == [("delete", "RayCluster", ACTIVE)]
    assert kit.events.reasons() == [c.EVENT_DELETED_RAYCLUSTER]
    kit.cache.remove(c.RAYCLUSTERS, "ns", ACTIVE)
    kit.client.requests.clear()
    await lifecycle.finalize(kit.ctx)
    assert kit.client.requests == [("update", "RayService", "rayservice-sample")]
    assert kit.client.stored[("RayService", "rayservice-sample")]["metadata"]["finalizers"] == ["other"]
    assert kit.ctx.ref.key not in kit.ctx.memory


def test_validation_is_memoised_per_generation(svc: Obj) -> None:
    kit = make_kit(svc)
    assert lifecycle.validate(kit.ctx) == []
    svc["spec"]["serveConfigV2"] = "applications: ["  # an edit the API server would bump the generation for
    assert lifecycle.validate(kit.ctx) == []  # same generation: the memo answers
    svc["metadata"]["generation"] = 2
    assert lifecycle.validate(kit.ctx)


def test_an_invalid_spec_warns_once_and_sets_ready_false(svc: Obj) -> None:
    kit = make_kit(svc)
    svc["spec"]["serveConfigV2"] = "applications: ["
    errors = lifecycle.validate(kit.ctx)
    lifecycle.report_invalid(kit.ctx, errors)
    lifecycle.report_invalid(kit.ctx, errors)
    assert kit.events.reasons() == [c.EVENT_INVALID_RAYSERVICE_SPEC]
    ready = condition(kit, c.COND_RAYSERVICE_READY)
    assert (ready["status"], ready["reason"]) == ("False", c.REASON_VALIDATION_FAILED)
    assert ready["observedGeneration"] == 1


def _initializing_since(kit: Kit, seconds_ago: float) -> None:
    since = kit.clock.utcnow() - timedelta(seconds=seconds_ago)
    kit.ctx.status["conditions"] = [
        {
            "type": c.COND_RAYSERVICE_READY,
            "status": "False",
            "reason": c.REASON_INITIALIZING,
            "message": "",
            "lastTransitionTime": format_rfc3339(since),
        }
    ]


def test_initializing_timeout_wakes_at_the_deadline_then_fails_for_good(svc: Obj) -> None:
    svc["metadata"]["annotations"] = {c.RAYSERVICE_INITIALIZING_TIMEOUT_ANNOTATION_KEY: "60s"}
    kit = make_kit(svc)
    tracking(kit, active=ACTIVE)
    _initializing_since(kit, 45)
    assert lifecycle.check_initializing_timeout(kit.ctx) is False
    assert kit.ctx.requeue.delay == pytest.approx(15)

    kit = make_kit(svc)
    tracking(kit, active=ACTIVE, pending=PENDING)
    _initializing_since(kit, 61)
    assert lifecycle.check_initializing_timeout(kit.ctx) is True
    assert kit.ctx.status["activeServiceStatus"] == {} and kit.ctx.status["pendingServiceStatus"] == {}
    assert condition(kit, c.COND_RAYSERVICE_READY)["reason"] == c.REASON_INITIALIZING_TIMEOUT
    assert kit.events.reasons() == [c.EVENT_RAYSERVICE_INITIALIZING_TIMEOUT]


async def test_status_is_written_only_when_it_changed(svc: Obj) -> None:
    svc["status"] = {"numServeEndpoints": 2, "serviceStatus": "Running"}
    kit = make_kit(svc)
    await lifecycle.write_status(kit.ctx)
    assert kit.client.requests == []
    kit.ctx.status["numServeEndpoints"] = 3
    await lifecycle.write_status(kit.ctx)
    assert kit.client.requests == [("update_status", "RayService", "rayservice-sample")]
    assert kit.client.last_status["numServeEndpoints"] == 3 and "lastUpdateTime" in kit.client.last_status
    assert kit.ctx.svc["metadata"]["resourceVersion"] != "10"  # later phases build on the written object


# -- suspend -------------------------------------------------------------------------------------


async def test_suspend_deletes_everything_owned_then_reports_suspended(svc: Obj) -> None:
    kit = make_kit(svc)
    tracking(kit, active=ACTIVE)
    kit.cache.put(c.RAYCLUSTERS, owned_cluster(svc, ACTIVE))
    owner = {
        "controller": True,
        "uid": svc["metadata"]["uid"],
        "kind": "RayService",
        "name": "rayservice-sample",
    }
    service = {
        "metadata": {"name": "rs-serve-svc", "namespace": "ns", "labels": owned_cluster_labels(svc)},
    }
    service["metadata"]["ownerReferences"] = [owner]
    kit.cache.put(SERVICES, service)
    foreign = {"metadata": {"name": "other", "namespace": "ns", "labels": owned_cluster_labels(svc)}}
    kit.cache.put(SERVICES, foreign)

    assert await suspend.suspend(kit.ctx) is False
    assert kit.client.requests == [("delete", "RayCluster", ACTIVE), ("delete", "Service", "rs-serve-svc")]
    assert kit.ctx.status["activeServiceStatus"] == {} and kit.ctx.status["numServeEndpoints"] == 0
    suspending = condition(kit, c.COND_RAYSERVICE_SUSPENDING)
    assert (suspending["status"], suspending["reason"]) == ("True", c.REASON_SUSPEND_REQUESTED)

    kit.cache.remove(c.RAYCLUSTERS, "ns", ACTIVE)
    kit.cache.remove(SERVICES, "ns", "rs-serve-svc")
    assert await suspend.suspend(kit.ctx) is True
    assert condition(kit, c.COND_RAYSERVICE_SUSPENDED)["status"] == "True"
    assert condition(kit, c.COND_RAYSERVICE_SUSPENDING)["reason"] == c.REASON_SUSPEND_COMPLETE


def test_resume_rearms_the_conditions_after_a_suspension(svc: Obj) -> None:
    kit = make_kit(svc)
    kit.ctx.set_condition(c.COND_RAYSERVICE_SUSPENDED, "True", c.REASON_SUSPEND_COMPLETE, "")
    suspend.resume(kit.ctx)
    assert condition(kit, c.COND_RAYSERVICE_SUSPENDED)["reason"] == c.REASON_RAYSERVICE_RESUMED
    assert condition(kit, c.COND_RAYSERVICE_READY)["reason"] == c.REASON_INITIALIZING
    before = list(kit.ctx.status["conditions"])
    suspend.resume(kit.ctx)  # nothing suspended any more: a no-op
    assert kit.ctx.status["conditions"] == before


# -- clusters ------------------------------------------------------------------------------------


async def test_a_dangling_cluster_gets_a_deadline_then_is_deleted(svc: Obj) -> None:
    kit = make_kit(svc)
    tracking(kit, active=ACTIVE)
    kit.cache.put(c.RAYCLUSTERS, owned_cluster(svc, ACTIVE))
    kit.cache.put(c.RAYCLUSTERS, owned_cluster(svc, "rayservice-sample-old"))
    await clusters.clean_up_dangling_clusters(kit.ctx)
    [(kind, name, patch)] = kit.client.patches
    assert (kind, name) == ("RayCluster", "rayservice-sample-old")
    deadline = parse_rfc3339(patch["metadata"]["annotations"][DELETION_DEADLINE_ANNOTATION_KEY])
    assert deadline == kit.clock.utcnow() + timedelta(seconds=60)
    assert kit.ctx.requeue.delay == pytest.approx(60)

    past = format_rfc3339(kit.clock.utcnow() - timedelta(seconds=1))
    kit.cache.put(
        c.RAYCLUSTERS, owned_cluster(svc, "rayservice-sample-old", **{DELETION_DEADLINE_ANNOTATION_KEY: past})
    )
    kit.client.requests.clear()
    await clusters.clean_up_dangling_clusters(kit.fresh())
    assert kit.client.requests == [("delete", "RayCluster", "rayservice-sample-old")]


async def test_a_missing_pending_cluster_is_created(svc: Obj) -> None:
    kit = make_kit(svc)
    tracking(kit, pending=PENDING)
    active, pending = await clusters.reconcile_clusters(kit.ctx)
    assert active is None and pending is not None and pending["metadata"]["name"] == PENDING
    assert kit.client.requests == [("create", "RayCluster", PENDING)]
    assert kit.events.reasons() == [c.EVENT_CREATED_RAYCLUSTER]


async def test_a_cluster_of_an_older_operator_is_restamped_in_place(svc: Obj) -> None:
    kit = make_kit(svc)
    tracking(kit, active=ACTIVE)
    old = owned_cluster(svc, ACTIVE, **{c.KUBERAY_VERSION_KEY: "v1.2.0"})
    old["spec"]["suspend"] = False
    kit.cache.put(c.RAYCLUSTERS, old)
    active, _ = await clusters.reconcile_clusters(kit.ctx)
    assert kit.client.requests == [("update", "RayCluster", ACTIVE)]
    assert (
        active is not None and active["metadata"]["annotations"][c.KUBERAY_VERSION_KEY] == c.KUBERAY_VERSION
    )
    assert active["spec"]["suspend"] is False  # KubeRay keeps the cluster's own suspend
    assert kit.events.reasons() == [c.EVENT_UPDATED_RAYCLUSTER]


def test_the_first_cluster_is_planned_in_the_status(svc: Obj) -> None:
    kit = make_kit(svc)
    name = clusters.plan_new_cluster(kit.ctx, None, None, pending_is_serving=False)
    assert name is not None and name.startswith("rayservice-sample-")
    assert kit.ctx.status["pendingServiceStatus"] == {"rayClusterName": name}
    current = owned_cluster(svc, ACTIVE)
    assert clusters.plan_new_cluster(make_kit(svc).ctx, current, None, pending_is_serving=False) is None


async def test_creating_a_cluster_that_exists_returns_it_without_an_event(svc: Obj) -> None:
    kit = make_kit(svc)
    kit.client.existing.add(("RayCluster", PENDING))
    kit.client.stored[("RayCluster", PENDING)] = owned_cluster(svc, PENDING)
    cluster = await clusters.create_cluster(kit.ctx, PENDING)
    assert cluster["metadata"]["uid"] == f"uid-{PENDING}"
    assert kit.events.events == []


async def test_a_failed_delete_is_a_warning_naming_the_api_answer(svc: Obj) -> None:
    kit = make_kit(svc)
    kit.client.fail[("delete", "RayCluster")] = Forbidden(403, "Forbidden", "no delete for you")
    with pytest.raises(Forbidden):
        await clusters.delete_cluster(kit.ctx, owned_cluster(svc, ACTIVE))
    [(type_, reason, message)] = kit.events.events
    assert (type_, reason) == ("Warning", c.EVENT_FAILED_TO_DELETE_RAYCLUSTER)
    assert f"ns/{ACTIVE}" in message and "no delete for you" in message


ZERO_CLUSTER_STATUS = {
    "desiredCPU": "0",
    "desiredGPU": "0",
    "desiredMemory": "0",
    "desiredTPU": "0",
    "head": {},
}


def test_cluster_statuses_are_copied_as_kuberay_re_encodes_them(svc: Obj) -> None:
    """KubeRay's calculateStatus: each side gets its cluster's status through the Go struct
    (omitempty zeros and unknown fields dropped, quantities and head always present), and a
    side without a cluster gets the zero status, replacing any earlier copy."""
    kit = make_kit(svc)
    tracking(kit, active=ACTIVE)
    cluster = owned_cluster(svc, ACTIVE)
    cluster["status"] = {
        "state": "ready",
        "desiredCPU": "2",
        "readyWorkerReplicas": 0,
        "reason": "",
        "head": {"podIP": "10.0.0.5", "serviceIP": ""},
        "notAField": 1,
    }
    kit.ctx.status["pendingServiceStatus"] = {"rayClusterStatus": {"state": "stale"}}
    clusters.record_cluster_statuses(kit.ctx, cluster, None)
    assert kit.ctx.status["activeServiceStatus"]["rayClusterStatus"] == {
        **ZERO_CLUSTER_STATUS,
        "state": "ready",
        "desiredCPU": "2",
        "head": {"podIP": "10.0.0.5"},
    }
    assert kit.ctx.status["pendingServiceStatus"]["rayClusterStatus"] == ZERO_CLUSTER_STATUS


# -- serving -------------------------------------------------------------------------------------


async def test_the_head_serve_label_follows_the_checkers_verdict(svc: Obj) -> None:
    kit = make_kit(svc)
    kit.cache.put(PODS, head_pod(ACTIVE, serve_label="false"))
    cluster = owned_cluster(svc, ACTIVE)
    await serving.sync_head_label(kit.ctx, cluster)
    assert kit.client.patches == [] and [t.pod_uid for t in kit.checker.requested] == ["head-uid"]

    kit.checker.verdicts["head-uid"] = HealthResult(True, "healthy", "", 0.0, "10.0.0.5:8000")
    await serving.sync_head_label(kit.ctx, cluster)
    assert kit.client.patches == [
        ("Pod", f"{ACTIVE}-head", {"metadata": {"labels": {c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY: "true"}}})
    ]
    assert kit.events.reasons() == [c.EVENT_UPDATED_HEAD_POD_SERVE_LABEL]


async def test_serve_waits_for_a_ready_head(svc: Obj) -> None:
    kit = make_kit(svc)
    kit.cache.put(PODS, head_pod(ACTIVE, ready=False))
    assert await serving.reconcile_serve(kit.ctx, owned_cluster(svc, ACTIVE)) == ServeResult()
    assert kit.dashboard.urls == []


async def test_serve_submits_the_config_once_and_reports_the_applications(svc: Obj) -> None:
    kit = make_kit(svc)
    kit.cache.put(PODS, head_pod(ACTIVE))
    kit.dashboard.apps = {"fruit_app": "DEPLOYING"}
    result = await serving.reconcile_serve(kit.ctx, owned_cluster(svc, ACTIVE))
    assert len(kit.dashboard.submitted) == 1 and kit.dashboard.urls[0] == ("http://10.0.0.5:8265", None)
    assert result.in_progress and not result.ready
    assert result.apps is not None and result.apps["fruit_app"]["status"] == "DEPLOYING"
    assert condition(kit, COND_SERVE_CONFIG_VALID)["status"] == "True"
    assert kit.events.reasons() == [c.EVENT_UPDATED_SERVE_APPLICATIONS]

    kit.dashboard.apps = {"fruit_app": "RUNNING"}
    result = await serving.reconcile_serve(kit.fresh(), owned_cluster(svc, ACTIVE))
    assert len(kit.dashboard.submitted) == 1  # remembered: not submitted again
    assert result.ready and not result.in_progress


async def test_a_config_ray_rejects_is_not_resubmitted_until_it_changes(svc: Obj) -> None:
    kit = make_kit(svc)
    kit.cache.put(PODS, head_pod(ACTIVE))
    kit.dashboard.reject = DashboardHTTPError(400, "bad import_path", "http://10.0.0.5:8265")
    result = await serving.reconcile_serve(kit.ctx, owned_cluster(svc, ACTIVE))
    assert not result.in_progress  # nothing to poll for
    valid = condition(kit, COND_SERVE_CONFIG_VALID)
    assert (valid["status"], valid["reason"], valid["message"]) == (
        "False",
        "ServeConfigRejected",
        "bad import_path",
    )
    assert kit.events.reasons() == [c.EVENT_FAILED_TO_UPDATE_SERVE_APPLICATIONS]
    kit.dashboard.reject = None
    await serving.reconcile_serve(kit.fresh(), owned_cluster(svc, ACTIVE))
    assert kit.dashboard.submitted == []
    svc["spec"]["serveConfigV2"] += "\n# edited\n"
    await serving.reconcile_serve(kit.fresh(svc), owned_cluster(svc, ACTIVE))
    assert len(kit.dashboard.submitted) == 1


async def test_the_auth_token_is_read_from_its_secret_once_per_head(svc: Obj) -> None:
    kit = make_kit(svc)
    pod = head_pod(ACTIVE)
    ref = {"secretKeyRef": {"name": "ray-token", "key": "token"}}
    pod["spec"]["containers"][0]["env"] = [
        {"name": "RAY_AUTH_MODE", "value": "token"},
        {"name": "RAY_AUTH_TOKEN", "valueFrom": ref},
    ]
    kit.client.existing.add(("Secret", "ray-token"))
    kit.client.stored[("Secret", "ray-token")] = {
        "metadata": {"name": "ray-token"},
        "data": {"token": base64.b64encode(b"s3cret\n").decode()},
    }
    assert await serving.auth_token(kit.ctx, pod) == "s3cret"
    assert await serving.auth_token(kit.fresh(), pod) == "s3cret"
    assert kit.client.requests == [("get", SECRETS.kind, "ray-token")]


async def test_serve_applications_go_to_the_pending_cluster_while_there_is_one(svc: Obj) -> None:
    kit = make_kit(svc)
    tracking(kit, active=ACTIVE, pending=PENDING)
    kit.cache.put(PODS, head_pod(PENDING))
    kit.dashboard.apps = {"fruit_app": "RUNNING"}
    active_serve, pending_serve = await serving.serve_applications(
        kit.ctx, owned_cluster(svc, ACTIVE), owned_cluster(svc, PENDING)
    )
    assert active_serve == ServeResult() and pending_serve.apps is not None
    assert "fruit_app" in kit.ctx.status["pendingServiceStatus"]["applicationStatuses"]
    assert "applicationStatuses" not in kit.ctx.status["activeServiceStatus"]


# -- traffic -------------------------------------------------------------------------------------


def test_promotion_needs_running_apps_and_a_ready_serve_pod(svc: Obj) -> None:
    kit = make_kit(svc)
    active, pending = owned_cluster(svc, ACTIVE), owned_cluster(svc, PENDING)
    ready = ServeResult(ready=True)
    assert traffic.promotion_target(kit.ctx, active, pending, ready, ready) is active  # no serve Pod yet
    kit.cache.put(PODS, worker_pod(PENDING, "w1"))
    assert traffic.promotion_target(kit.ctx, active, pending, ready, ready) is pending
    assert traffic.promotion_target(kit.ctx, active, pending, ServeResult(), ServeResult()) is None


async def test_routing_to_the_pending_cluster_promotes_it(svc: Obj) -> None:
    kit = make_kit(svc)
    tracking(kit, active=ACTIVE, pending=PENDING)
    promoted = await traffic.route_traffic(kit.ctx, owned_cluster(svc, PENDING))
    assert promoted
    assert kit.ctx.status["activeServiceStatus"] == {"rayClusterName": PENDING}
    assert kit.ctx.status["pendingServiceStatus"] == {}
    created = [(verb, kind) for verb, kind, _ in kit.client.requests]
    assert created == [("create", "Service"), ("create", "Service")]
    serve = kit.client.stored[("Service", serve_service_name(svc))]
    assert serve["spec"]["selector"][c.RAY_CLUSTER_LABEL_KEY] == PENDING


async def test_a_service_that_exists_is_repointed_keeping_its_cluster_ip(svc: Obj) -> None:
    kit = make_kit(svc)
    tracking(kit, active=PENDING)
    old = {
        "metadata": {"name": serve_service_name(svc), "namespace": "ns"},
        "spec": {"selector": {c.RAY_CLUSTER_LABEL_KEY: ACTIVE}, "clusterIP": "10.96.0.7", "ports": []},
    }
    kit.cache.put(SERVICES, old)
    assert await traffic.route_traffic(kit.ctx, owned_cluster(svc, PENDING)) is False  # already active
    serve = kit.client.stored[("Service", serve_service_name(svc))]
    assert serve["spec"]["selector"][c.RAY_CLUSTER_LABEL_KEY] == PENDING
    assert serve["spec"]["clusterIP"] == "10.96.0.7"
    assert c.EVENT_UPDATED_SERVICE in kit.events.reasons()


def test_endpoints_are_counted_once_per_ready_pod_and_exported_by_source(svc: Obj) -> None:
    kit = make_kit(svc)
    kit.cache.put(PODS, head_pod(ACTIVE))
    kit.cache.put(PODS, worker_pod(ACTIVE, "w1"))
    endpoints = [
        {"conditions": {"ready": True}, "targetRef": {"uid": "head-uid", "name": f"{ACTIVE}-head"}},
        {"conditions": {"ready": True}, "targetRef": {"uid": "uid-w1", "name": "w1"}},
        {"conditions": {"ready": False}, "targetRef": {"uid": "uid-w2", "name": "w2"}},
    ]
    labels = {SERVICE_NAME_LABEL: serve_service_name(svc)}
    for family in ("IPv4", "IPv6"):  # dual stack lists every Pod twice
        kit.cache.put(
            ENDPOINTSLICES,
            {
                "metadata": {"name": f"s-{family}", "namespace": "ns", "labels": labels},
                "endpoints": endpoints,
            },
        )
    traffic.count_endpoints(kit.ctx)
    assert kit.ctx.status["numServeEndpoints"] == 2
    for source in ("head", "worker"):
        labels = {"namespace": "ns", "name": "rayservice-sample", "source": source}
        assert registry.get_sample_value("kuberay_serve_endpoints", labels) == 1.0
