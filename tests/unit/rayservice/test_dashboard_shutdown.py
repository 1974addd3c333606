"""A reconcile draining at shutdown meets a closed dashboard factory: a transient failure, no leak.

The RayService controller closes its :class:`DashboardClientFactory` when its runnable stops,
which can be while a reconcile is still in flight. That reconcile must neither reopen the pool
(nothing would close it again) nor report Ray as failing.
"""

from __future__ import annotations

from typing import Any, cast

from controllers import constants as c
from controllers.ray.dashboard import DashboardClientFactory
from controllers.ray.health import HeadProxyHealthChecker
from controllers.rayservice.reconciler import RayServiceReconciler
from kuberay_py.client import Client
from kuberay_py.client.resources import PODS, Resource
from kuberay_py.clock import FakeClock

CLUSTER = "rs-raycluster-abcde"


class OneHeadCache:
    def __init__(self, pod: dict[str, Any]) -> None:
        self.pod = pod

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return None

    def list(
        self, res: Resource, namespace: str | None = None, *, labels: dict[str, str] | None = None
    ) -> list[dict[str, Any]]:
        return [self.pod] if res is PODS and (labels or {}).get(c.RAY_CLUSTER_LABEL_KEY) == CLUSTER else []


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def event(self, obj: dict[str, Any], type_: str, reason: str, message: str, **kw: Any) -> None:
        self.events.append((type_, reason))


def head_pod() -> dict[str, Any]:
    labels = {c.RAY_CLUSTER_LABEL_KEY: CLUSTER, c.RAY_NODE_TYPE_LABEL_KEY: c.NODE_TYPE_HEAD}
    ports = [{"name": "dashboard", "containerPort": 8265}]
    return {
        "metadata": {"name": f"{CLUSTER}-head", "namespace": "ns", "uid": "head-uid", "labels": labels},
        "spec": {"containers": [{"name": "ray-head", "ports": ports}]},
        "status": {"phase": "Running", "podIP": "10.0.0.5",
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }


async def _reconciler(recorder: Recorder) -> tuple[RayServiceReconciler, DashboardClientFactory]:
    factory = DashboardClientFactory()
    await factory.close()  # the operator is shutting down
    reconciler = RayServiceReconciler(
        cast(Client, object()), OneHeadCache(head_pod()), recorder, factory, HeadProxyHealthChecker(),
        clock=FakeClock(),
    )
    return reconciler, factory


async def test_serve_phase_treats_a_closed_factory_as_transient(samples: Any) -> None:
    recorder = Recorder()
    reconciler, factory = await _reconciler(recorder)
    svc = samples("ray-service.sample.yaml")
    cluster = {"metadata": {"name": CLUSTER, "namespace": "ns"}, "spec": {}}

    result = await reconciler._reconcile_serve(svc, "ns/rayservice-sample", {}, cluster)

    assert result.in_progress and not result.ready and result.apps is None
    assert recorder.events == []  # shutting down is not Ray's failure: no Warning event
    assert factory._session is None  # and no connection pool was reopened


async def test_submit_on_a_closed_factory_is_no_failed_update_warning(samples: Any) -> None:
    recorder = Recorder()
    reconciler, _ = await _reconciler(recorder)
    svc = samples("ray-service.sample.yaml")
    cluster = {"metadata": {"name": CLUSTER, "namespace": "ns"}, "spec": {}}
    open_factory = DashboardClientFactory()
    dashboard = open_factory.client("http://10.0.0.5:8265")  # held from before the close
    await open_factory.close()
    status: dict[str, Any] = {}

    submitted = await reconciler._submit(svc, "ns/rayservice-sample", status, cluster, dashboard,
                                         svc["spec"]["serveConfigV2"], "new config")

    assert submitted is False
    assert recorder.events == []
    assert status.get("conditions", []) == []
    assert reconciler.serve_configs.get("ns/rayservice-sample", CLUSTER) == ""  # nothing recorded as sent
