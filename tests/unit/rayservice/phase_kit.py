"""An explicit ServiceContext over fakes, for driving RayService phase functions one at a time."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import cast

from controllers import constants as c
from controllers.common.objects import key_of
from controllers.common.scope import Deps
from controllers.ray.dashboard import DashboardClientFactory, DashboardHTTPError
from controllers.ray.health import HeadProxyHealthChecker, HeadTarget, HealthResult
from controllers.ray.serve_status import AppStatus, ServeDetails
from controllers.rayservice.cluster import build_ray_cluster
from controllers.rayservice.context import ServiceContext
from controllers.rayservice.memory import Memory
from controllers.rayservice.options import RayServiceOptions
from controllers.rayservice.shapes import RayServiceStatus
from kuberay_py.client import Client
from kuberay_py.clock import FakeClock
from kuberay_py.objects import Obj
from tests.unit.fakes import Events, FakeCache, RecordingClient


class FakeChecker(HeadProxyHealthChecker):
    """Verdicts set by the test; ``requested`` records what a phase asked to have checked."""

    def __init__(self) -> None:
        super().__init__(clock=FakeClock())
        self.verdicts: dict[str, HealthResult] = {}
        self.requested: list[HeadTarget] = []

    def latest(self, pod_uid: str) -> HealthResult | None:
        return self.verdicts.get(pod_uid)

    def is_fresh(self, pod_uid: str) -> bool:
        return pod_uid in self.verdicts

    def request(self, target: HeadTarget) -> None:
        self.requested.append(target)


@dataclass
class FakeDashboard:
    apps: dict[str, str] = field(default_factory=dict)  # app name -> status
    reject: DashboardHTTPError | None = None
    submitted: list[Obj] = field(default_factory=list)
    urls: list[tuple[str, str | None]] = field(default_factory=list)
    proxy_host: str | None = None  # dashboards dialled directly, as without --use-kubernetes-proxy

    def client(self, base_url: str, *, auth_token: str | None = None) -> FakeDashboard:
        self.urls.append((base_url, auth_token))
        return self

    async def get_serve_details(self) -> ServeDetails:
        return ServeDetails({name: AppStatus(status) for name, status in self.apps.items()})

    async def put_serve_applications(self, config: Obj) -> None:
        if self.reject is not None:
            raise self.reject
        self.submitted.append(config)


@dataclass
class Kit:
    ctx: ServiceContext
    cache: FakeCache
    client: RecordingClient
    events: Events
    checker: FakeChecker
    dashboard: FakeDashboard
    clock: FakeClock

    def fresh(self, svc: Obj | None = None) -> ServiceContext:
        """A new context over the same fakes and memory (the next reconcile)."""
        status = copy.deepcopy(self.ctx.status)
        return make_kit(svc or self.ctx.svc, status=status, memory=self.ctx.memory, base=self).ctx


def make_kit(
    svc: Obj, *, status: RayServiceStatus | None = None, memory: Memory | None = None, base: Kit | None = None
) -> Kit:
    cache = base.cache if base else FakeCache()
    client = base.client if base else RecordingClient()
    events = base.events if base else Events()
    checker = base.checker if base else FakeChecker()
    dashboard = base.dashboard if base else FakeDashboard()
    clock = base.clock if base else FakeClock()
    working = status if status is not None else cast(RayServiceStatus, copy.deepcopy(svc.get("status") or {}))
    memory = memory if memory is not None else Memory()
    ctx = ServiceContext(
        deps=Deps(cast(Client, client), cache, events, clock, RayServiceOptions(env={})),
        dashboards=cast(DashboardClientFactory, dashboard),
        checker=checker,
        memory=memory,
        memo=memory.memos.get(key_of(svc), str(svc["metadata"].get("uid") or "")),
        svc=svc,
        status=working,
    )
    return Kit(ctx, cache, client, events, checker, dashboard, clock)


def owned_cluster(svc: Obj, name: str, **annotations: str) -> Obj:
    """The RayCluster the RayService would build, as the cache shows it."""
    cluster = build_ray_cluster(svc, name)
    cluster["metadata"]["uid"] = f"uid-{name}"
    cluster["metadata"]["annotations"].update(annotations)
    return cluster


def head_pod(
    cluster: str, *, ready: bool = True, serve_label: str | None = None, uid: str = "head-uid"
) -> Obj:
    labels = {c.RAY_CLUSTER_LABEL_KEY: cluster, c.RAY_NODE_TYPE_LABEL_KEY: c.NODE_TYPE_HEAD}
    if serve_label is not None:
        labels[c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY] = serve_label
    return {
        "metadata": {"name": f"{cluster}-head", "namespace": "ns", "uid": uid, "labels": labels},
        "spec": {
            "containers": [{"name": "ray-head", "ports": [{"name": "dashboard", "containerPort": 8265}]}]
        },
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.5",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def worker_pod(cluster: str, name: str, *, serve: bool = True) -> Obj:
    pod = head_pod(cluster, uid=f"uid-{name}")
    pod["metadata"]["name"] = name
    pod["metadata"]["labels"][c.RAY_NODE_TYPE_LABEL_KEY] = c.NODE_TYPE_WORKER
    if serve:
        pod["metadata"]["labels"][c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY] = c.SERVE_LABEL_TRUE
    return pod
