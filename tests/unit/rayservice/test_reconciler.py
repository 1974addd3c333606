"""The RayService reconciler's whole flow over fakes: from a new RayService to a promoted, Ready one.

Each step feeds the cache what the API server and the watches would deliver next (our own writes,
a ready head, running Serve applications, endpoints) and checks what the reconcile sent and
asked for. Only the reconciler's public face is used: ``reconcile()`` and ``memory``.
"""

from __future__ import annotations

from typing import Any, cast

from controllers import constants as c
from controllers.common.conditions import find_condition
from controllers.common.scope import Deps
from controllers.ray.dashboard import DashboardClientFactory
from controllers.ray.health import HealthResult
from controllers.rayservice.options import SERVICE_NAME_LABEL, RayServiceOptions
from controllers.rayservice.reconciler import RayServiceReconciler, refresh_delay
from controllers.rayservice.services import head_service_name, serve_service_name
from kuberay_py.client import Client, Resource
from kuberay_py.client.resources import ENDPOINTSLICES, PODS, SERVICES
from kuberay_py.clock import FakeClock
from kuberay_py.controller import Request, Result
from kuberay_py.objects import Obj
from tests.unit.fakes import Events, FakeCache, RecordingClient
from tests.unit.rayservice.phase_kit import FakeChecker, FakeDashboard, head_pod, worker_pod

REQ = Request("ns", "rayservice-sample")
KEY = "ns/rayservice-sample"


class Rig:
    def __init__(self, svc: Obj) -> None:
        self.cache, self.client, self.events = FakeCache(), RecordingClient(), Events()
        self.checker, self.dashboard = FakeChecker(), FakeDashboard()
        self.reconciler = RayServiceReconciler(
            Deps(cast(Client, self.client), self.cache, self.events, FakeClock(), RayServiceOptions(env={})),
            cast(DashboardClientFactory, self.dashboard),
            self.checker,
        )
        self.cache.put(c.RAYSERVICES, svc)

    def watch_delivers(self, res: Resource, name: str) -> Obj:
        """What the API server holds for ``name`` reaches the cache (as a watch event would)."""
        return self.cache.put(res, self.client.stored[(res.kind, name)])

    def status(self) -> Obj:
        return dict((self.cache.get(c.RAYSERVICES, REQ.name, REQ.namespace) or {}).get("status") or {})

    def condition(self, type_: str) -> Obj:
        return dict(find_condition(self.status().get("conditions"), type_) or {})

    async def reconcile(self) -> Result:
        self.client.requests.clear()
        result = await self.reconciler.reconcile(REQ)
        self.watch_delivers(c.RAYSERVICES, REQ.name)
        return result


async def test_a_new_rayservice_is_served_promoted_and_ready(samples: Any) -> None:
    rig = Rig(samples("ray-service.sample.yaml"))

    # 1. The finalizer, the pending cluster's name in the status, then the cluster itself.
    rig.client.existing.add(("RayService", REQ.name))
    result = await rig.reconcile()
    verbs = [(verb, kind) for verb, kind, _ in rig.client.requests]
    assert verbs == [("update", "RayService"), ("update_status", "RayService"), ("create", "RayCluster")]
    pending = rig.status()["pendingServiceStatus"]["rayClusterName"]
    assert rig.client.requests[-1] == ("create", "RayCluster", pending)
    assert rig.condition(c.COND_RAYSERVICE_READY)["reason"] == c.REASON_INITIALIZING
    assert result == Result(requeue_after=refresh_delay(KEY, 300.0))  # nothing in progress: watches

    # 2. The cluster's head is up and healthy: the serve label, then the config goes to Ray.
    rig.watch_delivers(c.RAYCLUSTERS, pending)
    rig.cache.put(PODS, head_pod(pending, serve_label="false"))
    rig.checker.verdicts["head-uid"] = HealthResult(True, "healthy", "", 0.0, "10.0.0.5:8000")
    rig.dashboard.apps = {"fruit_app": "DEPLOYING"}
    result = await rig.reconcile()
    assert ("patch", "Pod", f"{pending}-head") in rig.client.requests
    assert len(rig.dashboard.submitted) == 1
    assert result == Result(requeue_after=2.0)  # Serve is deploying: poll
    assert rig.status()["pendingServiceStatus"]["applicationStatuses"]["fruit_app"]["status"] == "DEPLOYING"

    # 3. Applications RUNNING and a ready serve Pod: the Services point at it, it becomes active.
    rig.cache.put(PODS, head_pod(pending, serve_label="true"))
    rig.cache.put(PODS, worker_pod(pending, "w1"))
    rig.dashboard.apps = {"fruit_app": "RUNNING"}
    result = await rig.reconcile()
    assert [kind for verb, kind, _ in rig.client.requests if verb == "create"] == ["Service", "Service"]
    assert rig.status()["activeServiceStatus"]["rayClusterName"] == pending
    assert not rig.status()["pendingServiceStatus"].get("rayClusterName")
    assert result == Result(requeue_after=2.0)  # the old cluster's clean-up is next
    assert c.EVENT_CREATED_SERVICE in rig.events.reasons()

    # 4. The serve Service has ready endpoints: Ready.
    svc = rig.cache.get(c.RAYSERVICES, REQ.name, REQ.namespace) or {}
    for name in (head_service_name(svc), serve_service_name(svc)):
        rig.watch_delivers(SERVICES, name)
    labels = {SERVICE_NAME_LABEL: serve_service_name(svc)}
    endpoints = [{"conditions": {"ready": True}, "targetRef": {"uid": "uid-w1", "name": "w1"}}]
    rig.cache.put(
        ENDPOINTSLICES,
        {"metadata": {"name": "s", "namespace": "ns", "labels": labels}, "endpoints": endpoints},
    )
    await rig.reconcile()
    assert rig.status()["numServeEndpoints"] == 1
    assert rig.condition(c.COND_RAYSERVICE_READY)["status"] == "True"
    assert rig.status()["serviceStatus"] == c.SERVICE_STATUS_RUNNING

    # 5. A steady reconcile writes nothing.
    await rig.reconcile()
    assert [verb for verb, _, _ in rig.client.requests] == []

    # 6. Gone from the cache: everything remembered about it goes too.
    assert KEY in rig.reconciler.memory
    rig.cache.remove(c.RAYSERVICES, "ns", REQ.name)
    rig.client.requests.clear()
    assert await rig.reconciler.reconcile(REQ) == Result()
    assert (
        rig.client.requests == []
        and KEY not in rig.reconciler.memory
        and len(rig.reconciler.memory.memos) == 0
    )


async def test_an_invalid_rayservice_is_reported_and_not_requeued(samples: Any) -> None:
    svc = samples("ray-service.sample.yaml")
    svc["spec"]["serveConfigV2"] = "applications: ["
    rig = Rig(svc)
    assert await rig.reconcile() == Result()
    assert [kind for verb, kind, _ in rig.client.requests if verb == "create"] == []
    assert rig.condition(c.COND_RAYSERVICE_READY)["reason"] == c.REASON_VALIDATION_FAILED
    assert rig.events.reasons() == [c.EVENT_INVALID_RAYSERVICE_SPEC]


async def test_a_suspended_rayservice_prepares_no_cluster(samples: Any) -> None:
    svc = samples("ray-service.sample.yaml")
    svc["spec"]["suspend"] = True
    rig = Rig(svc)
    result = await rig.reconcile()
    assert [kind for verb, kind, _ in rig.client.requests if verb == "create"] == []
    assert rig.condition(c.COND_RAYSERVICE_SUSPENDED)["status"] == "True"  # nothing owned: suspended at once
    assert result == Result()
