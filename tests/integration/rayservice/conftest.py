"""The real manager with the RayCluster and RayService controllers on envtest, plus a fake Ray.

As in KubeRay's envtest suite there is no kubelet: tests drive Pod status by hand and create the
serve Service's EndpointSlices themselves. The head Pods' Ray is one local aiohttp app serving the
dashboard's Serve REST API and the proxy's ``/-/healthz`` on one address of a pod network block
(every Pod gets that IP): kube-apiserver rejects loopback EndpointSlice addresses, and no cluster
has loopback Pod IPs.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml
from aiohttp import web

from controllers import constants as c
from kuberay_py.client import AlreadyExists, Client, NotFound
from kuberay_py.client.resources import CRDS, ENDPOINTSLICES, PODS
from kuberay_py.envtest import Environment
from tests import polling, rayservice_harness
from tests.live import update_live
from tests.rayservice_harness import CRD_DIR, Operator, sample, stop_operator

__all__ = [
    "Operator",
    "eventually",
    "mark_pods_ready",
    "put_endpoint_slice",
    "rayservice_manifest",
    "stop_operator",
]

# A stuck envtest step fails within 20 s (there is no kubelet or fake Ray start-up to wait for).
eventually = functools.partial(polling.eventually, timeout=20.0)


@dataclass
class PodAddress:
    """The one Pod IP of this session (set by the ``pod_ip`` fixture; Pods and slices use it)."""

    ip: str = ""


POD_ADDRESS = PodAddress()


@pytest.fixture(scope="session")
def pod_ip(envtest: Environment) -> str:
    """An address of a pod network block this host routes locally, held for the session."""
    if not POD_ADDRESS.ip:
        POD_ADDRESS.ip = envtest.claim_pod_network().allocator().allocate()
    return POD_ADDRESS.ip


@dataclass
class FakeRay:
    """One Ray head's dashboard (Serve REST API) and Serve proxy, as far as the operator sees them."""

    ip: str = ""
    dashboard_port: int = 0
    proxy_port: int = 0
    puts: list[dict[str, Any]] = field(default_factory=list)
    apps: dict[str, str] = field(default_factory=dict)  # app name -> status
    put_status: int = 200
    put_body: str = ""
    auto_running: bool = True
    proxy_status: int = 200
    hang_gets: bool = False
    gets: int = 0
    healthz_calls: int = 0
    required_token: str | None = None
    unauthorized: int = 0

    def denied(self, request: web.Request) -> web.Response | None:
        if (
            self.required_token
            and request.headers.get("x-ray-authorization") != f"Bearer {self.required_token}"
        ):
            self.unauthorized += 1
            return web.Response(status=401, text="Unauthorized")
        return None

    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def serve_get(self, request: web.Request) -> web.Response:
        self.gets += 1
        if (denied := self.denied(request)) is not None:
            return denied
        if self.hang_gets:
            await self.release.wait()
        apps = {
            name: {
                "name": name,
                "status": status,
                "message": "",
                "deployments": {
                    "D": {"name": "D", "status": "HEALTHY" if status == "RUNNING" else "UPDATING"}
                },
            }
            for name, status in self.apps.items()
        }
        return web.json_response({"controller_info": {}, "proxies": {}, "applications": apps})

    async def serve_put(self, request: web.Request) -> web.Response:
        if (denied := self.denied(request)) is not None:
            return denied
        body = await request.json()
        if self.put_status != 200:
            return web.Response(status=self.put_status, text=self.put_body)
        self.puts.append(body)
        self.apps = {
            a["name"]: ("RUNNING" if self.auto_running else "DEPLOYING") for a in body["applications"]
        }
        return web.Response(status=200)

    async def healthz(self, request: web.Request) -> web.Response:
        self.healthz_calls += 1
        return web.Response(status=self.proxy_status, text="success" if self.proxy_status == 200 else "no")


@pytest.fixture
async def fake_ray(pod_ip: str) -> AsyncIterator[FakeRay]:
    fake = FakeRay(ip=pod_ip)
    dash = web.Application()
    dash.router.add_get("/api/serve/applications/", fake.serve_get)
    dash.router.add_put("/api/serve/applications/", fake.serve_put)
    proxy = web.Application()
    proxy.router.add_get("/-/healthz", fake.healthz)
    runners = []
    for app, attr in ((dash, "dashboard_port"), (proxy, "proxy_port")):
        runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.1)
        await runner.setup()
        site = web.TCPSite(runner, pod_ip, 0)
        await site.start()
        setattr(fake, attr, site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
        runners.append(runner)
    yield fake
    fake.release.set()
    for r in runners:
        await r.cleanup()


async def ensure_crds(env: Environment, client: Client) -> None:
    try:
        await client.get(CRDS, "rayservices.ray.io")
    except NotFound:
        await env.install_crds([str(CRD_DIR)])
        await env.wait_for_crds(["rayclusters.ray.io", "rayservices.ray.io"])


@pytest.fixture
async def start_operator(
    envtest: Environment, k8s: Client
) -> AsyncIterator[Callable[..., Awaitable[Operator]]]:
    """Start operators on the shared envtest server (options: ``rayservice_harness.start_operator``)."""
    await ensure_crds(envtest, k8s)
    running: list[Operator] = []

    async def start_one(**options: Any) -> Operator:
        op = rayservice_harness.start_operator(envtest.client_config, **options)
        running.append(op)
        return op

    yield start_one
    for op in running:
        await stop_operator(op)


def rayservice_manifest(fake: FakeRay, name: str = "rs", workers: int = 1) -> dict[str, Any]:
    """KubeRay's sample, pointed at the fake Ray's ports, with a small serve config."""
    obj = sample("ray-service.sample.yaml")
    obj["metadata"] = {"name": name}
    obj["spec"]["serveConfigV2"] = yaml.safe_dump(
        {"applications": [{"name": "fruit_app", "import_path": "fruit:app", "route_prefix": "/fruit"}]}
    )
    spec = obj["spec"]["rayClusterConfig"]
    spec["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "dashboard", "containerPort": fake.dashboard_port},
        {"name": "serve", "containerPort": fake.proxy_port},
    ]
    group = spec["workerGroupSpecs"][0]
    group.update(replicas=workers, minReplicas=workers, maxReplicas=max(5, workers))
    group["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "serve", "containerPort": fake.proxy_port}
    ]
    return obj


async def mark_pods_ready(client: Client, namespace: str, cluster: str) -> list[dict[str, Any]]:
    """What the kubelet would do: Running, Ready, an IP (the fake Ray's address)."""
    assert POD_ADDRESS.ip, "the Pod IP is set by the fake_ray fixture"
    pods = (await client.list(PODS, namespace, label_selector=f"{c.RAY_CLUSTER_LABEL_KEY}={cluster}"))[
        "items"
    ]
    out = []
    for pod in pods:
        if (pod.get("status") or {}).get("phase") == "Running":
            out.append(pod)
            continue
        out.append(await update_live(client, PODS, pod["metadata"]["name"], namespace, _running, status=True))
    return out


def _running(pod: dict[str, Any]) -> None:
    pod["status"] = {
        "phase": "Running",
        "podIP": POD_ADDRESS.ip,
        "podIPs": [{"ip": POD_ADDRESS.ip}],
        "conditions": [{"type": "Ready", "status": "True"}],
    }


async def put_endpoint_slice(
    client: Client, namespace: str, service: str, pods: list[dict[str, Any]], port: int
) -> None:
    """What the EndpointSlice controller would publish for the serve Service."""
    body = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{service}-manual",
            "namespace": namespace,
            "labels": {"kubernetes.io/service-name": service},
        },
        "addressType": "IPv4",
        "endpoints": [
            {
                "addresses": [POD_ADDRESS.ip],
                "conditions": {"ready": True},
                "targetRef": {
                    "kind": "Pod",
                    "name": p["metadata"]["name"],
                    "namespace": namespace,
                    "uid": p["metadata"]["uid"],
                },
            }
            for p in pods
        ],
        "ports": [{"name": "serve", "port": port, "protocol": "TCP"}],
    }
    try:
        await client.create(ENDPOINTSLICES, body, namespace)
    except AlreadyExists:
        await update_live(
            client,
            ENDPOINTSLICES,
            body["metadata"]["name"],
            namespace,
            lambda existing: existing.update(endpoints=body["endpoints"]),
        )
