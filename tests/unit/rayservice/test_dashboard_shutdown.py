"""A reconcile draining at shutdown meets a closed dashboard factory: a transient failure, no leak.

The RayService controller closes its :class:`DashboardClientFactory` when its runnable stops,
which can be while a reconcile is still in flight. That reconcile must neither reopen the pool
(nothing would close it again) nor report Ray as failing.
"""

from __future__ import annotations

from typing import Any, cast

import pytest

from controllers import constants as c
from controllers.common.scope import Deps
from controllers.ray.dashboard import DashboardClientFactory, DashboardClosed
from controllers.ray.health import HeadProxyHealthChecker
from controllers.rayservice.context import ServiceContext
from controllers.rayservice.memory import Memory, ServiceMemo
from controllers.rayservice.options import RayServiceOptions
from controllers.rayservice.serving import reconcile_serve, submit
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
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.5",
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def context(recorder: Recorder, factory: DashboardClientFactory, svc: dict[str, Any]) -> ServiceContext:
    deps = Deps(  # any API call would fail loudly
        cast(Client, object()), OneHeadCache(head_pod()), recorder, FakeClock(), RayServiceOptions(env={})
    )
    return ServiceContext(
        deps=deps,
        dashboards=factory,
        checker=HeadProxyHealthChecker(),
        memory=Memory(),
        memo=ServiceMemo("uid"),
        svc=svc,
        status={},
    )


async def closed_factory() -> DashboardClientFactory:
    factory = DashboardClientFactory()
    await factory.close()  # the operator is shutting down
    return factory


async def test_serve_phase_treats_a_closed_factory_as_transient(samples: Any) -> None:
    recorder = Recorder()
    factory = await closed_factory()
    ctx = context(recorder, factory, samples("ray-service.sample.yaml"))
    cluster = {"metadata": {"name": CLUSTER, "namespace": "ns"}, "spec": {}}

    result = await reconcile_serve(ctx, cluster)

    assert result.in_progress and not result.ready and result.apps is None
    assert recorder.events == []  # shutting down is not Ray's failure: no Warning event
    assert ctx.status == {}
    assert factory.closed  # and the pool stays closed: a later client is refused, not reopened
    with pytest.raises(DashboardClosed):
        factory.client("http://10.0.0.5:8265")


async def test_submit_on_a_closed_factory_is_no_failed_update_warning(samples: Any) -> None:
    recorder = Recorder()
    svc = samples("ray-service.sample.yaml")
    ctx = context(recorder, await closed_factory(), svc)
    cluster = {"metadata": {"name": CLUSTER, "namespace": "ns"}, "spec": {}}
    open_factory = DashboardClientFactory()
    dashboard = open_factory.client("http://10.0.0.5:8265")  # held from before the close
    await open_factory.close()

    submitted = await submit(ctx, cluster, dashboard, svc["spec"]["serveConfigV2"], "new config")

    assert submitted is False
    assert recorder.events == []
    assert ctx.status.get("conditions", []) == []
    assert ctx.memory.serve_configs.get("ns/rayservice-sample", CLUSTER) == ""  # nothing recorded as sent
