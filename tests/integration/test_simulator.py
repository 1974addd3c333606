"""The cluster simulator against the envtest API server, with probe periods stepped on a FakeClock.

Every assertion reads the API server (Pods, EndpointSlices, owned objects); waits are watches
bounded by a generous timeout, never sleeps.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web

from kuberay_py.client import Client, NotFound, Resource, resources
from kuberay_py.clock import FakeClock
from kuberay_py.envtest import Environment
from kuberay_py.envtest.sim import Simulator
from tests.sim_harness import PodServers, running_simulator

WAIT = 20.0  # bound for eventual consistency on a loaded machine, not a performance assertion
PERIOD = 5
FAILURE_THRESHOLD = 3


class WebRuntime:
    """A PodRuntime whose Pods serve ``GET /ready`` on port 8080 with a switchable answer."""

    def __init__(self) -> None:
        self.answer: dict[str, str] = {}  # pod name -> body ("success" or anything else)
        self.starts: dict[str, int] = {}
        self.servers = PodServers()

    async def start(self, pod: dict[str, Any], ip: str) -> None:
        name = pod["metadata"]["name"]
        self.answer.setdefault(name, "success")
        self.starts[name] = self.starts.get(name, 0) + 1

        async def ready(_: web.Request) -> web.Response:
            return web.Response(text=self.answer[name])

        app = web.Application()
        app.router.add_get("/ready", ready)
        await self.servers.serve(pod, ip, app)

    async def stop(self, pod: dict[str, Any], ip: str) -> None:
        await self.servers.stop(pod)


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def env() -> AsyncIterator[Environment]:
    # An Environment of its own: a simulator binds every unscheduled Pod, which must not touch
    # Pods other tests leave in the shared session environment.
    async with Environment() as e:
        yield e


@pytest_asyncio.fixture(loop_scope="session")
async def sim(env: Environment) -> AsyncIterator[tuple[Simulator, WebRuntime, FakeClock, Client]]:
    clock = FakeClock()
    runtime = WebRuntime()
    client = env.new_client()
    try:
        async with running_simulator(env, pod_runtime=runtime, clock=clock) as simulator:
            yield simulator, runtime, clock, client
    finally:
        await client.close()


@pytest_asyncio.fixture(loop_scope="session")
async def ns(env: Environment) -> AsyncIterator[str]:
    name = await env.create_namespace()
    yield name
    await env.delete_namespace(name)


async def wait_for(
    client: Client,
    res: Resource,
    namespace: str | None,
    pred: Callable[[dict[str, Any]], bool],
    *,
    label_selector: str | None = None,
    field_selector: str | None = None,
) -> dict[str, Any]:
    """The first object (now or from the watch) satisfying ``pred``."""
    async with asyncio.timeout(WAIT):
        listing = await client.list(
            res, namespace, label_selector=label_selector, field_selector=field_selector
        )
        for item in listing["items"]:
            if pred(item):
                return dict(item)
        async for event in client.watch(
            res,
            namespace,
            resource_version=listing["metadata"]["resourceVersion"],
            label_selector=label_selector,
            field_selector=field_selector,
        ):
            if event["type"] in ("ADDED", "MODIFIED") and pred(event["object"]):
                return dict(event["object"])
    raise AssertionError("unreachable")


async def wait_gone(client: Client, res: Resource, name: str, namespace: str | None) -> None:
    async with asyncio.timeout(WAIT):
        while True:
            try:
                obj = await client.get(res, name, namespace)
            except NotFound:
                return
            async for event in client.watch(
                res,
                namespace,
                resource_version=obj["metadata"]["resourceVersion"],
                field_selector=f"metadata.name={name}",
            ):
                if event["type"] == "DELETED":
                    return


def web_pod(name: str, **probes: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {
            "containers": [
                {
                    "name": "web",
                    "image": "example/web:1",
                    "ports": [{"name": "http", "containerPort": 8080}],
                    **probes,
                }
            ]
        },
    }


def service(name: str, selector: dict[str, str], port: dict[str, Any]) -> dict[str, Any]:
    """A ClusterIP Service with one port (the EndpointSlice controller publishes its endpoints)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": selector, "ports": [port]},
    }


READINESS = {
    "exec": {"command": ["bash", "-c", "wget -T 2 -q -O- http://localhost:8080/ready | grep success"]},
    "periodSeconds": PERIOD,
    "failureThreshold": FAILURE_THRESHOLD,
}


def endpoint_conditions(slice_: dict[str, Any], pod: str) -> dict[str, Any] | None:
    for ep in slice_.get("endpoints") or []:
        if ep.get("targetRef", {}).get("name") == pod:
            return dict(ep["conditions"])
    return None


def pod_ready(pod: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions", [])
    )


async def test_readiness_url_drives_ready_endpoint_and_drops_out_within_period_times_threshold(
    sim: tuple[Simulator, WebRuntime, FakeClock, Client], ns: str
) -> None:
    simulator, runtime, clock, client = sim
    await client.create(
        resources.SERVICES,
        service("web", {"app": "web"}, {"name": "web", "port": 80, "targetPort": "http"}),
        ns,
    )
    await client.create(resources.PODS, web_pod("web-0", readinessProbe=READINESS), ns)
    selector = "kubernetes.io/service-name=web"

    pod = await wait_for(client, resources.PODS, ns, pod_ready, field_selector="metadata.name=web-0")
    ip = pod["status"]["podIP"]
    assert ipaddress.ip_address(ip) in simulator.network.block and ip != simulator.network.gateway
    if simulator.network.routed:
        assert not ipaddress.ip_address(ip).is_loopback, "a pod network address, as in a cluster"
    assert simulator.addresses.in_use(ip)  # the Simulator's allocator is the kubelet's
    assert pod["spec"]["nodeName"] == "sim-node" and pod["status"]["phase"] == "Running"
    slice_ = await wait_for(
        client,
        resources.ENDPOINTSLICES,
        ns,
        lambda s: (endpoint_conditions(s, "web-0") or {}).get("ready") is True,
        label_selector=selector,
    )
    assert slice_["addressType"] == "IPv4" and slice_["ports"] == [
        {"name": "web", "port": 8080, "protocol": "TCP"}
    ]
    (ep,) = slice_["endpoints"]
    assert ep["addresses"] == [ip] and ep["targetRef"]["uid"] == pod["metadata"]["uid"]
    assert slice_["metadata"]["ownerReferences"][0]["kind"] == "Service"

    # The URL starts failing: the endpoint stays ready for threshold-1 periods, then drops out.
    runtime.answer["web-0"] = "boom"
    kubelet = simulator.kubelet
    for attempt in range(1, FAILURE_THRESHOLD + 1):
        rounds = kubelet.probe_rounds(ns, "web-0", "readiness")
        await clock.advance(PERIOD)
        await asyncio.wait_for(kubelet.wait_for_probe_rounds(ns, "web-0", "readiness", rounds + 1), WAIT)
        current = await client.get(resources.PODS, "web-0", ns)
        assert pod_ready(current) is (attempt < FAILURE_THRESHOLD), f"after {attempt} failed probes"
    slice_ = await wait_for(
        client,
        resources.ENDPOINTSLICES,
        ns,
        lambda s: (endpoint_conditions(s, "web-0") or {}).get("ready") is False,
        label_selector=selector,
    )
    assert endpoint_conditions(slice_, "web-0") == {"ready": False, "serving": False, "terminating": False}

    # Recovery: one success (successThreshold 1) brings it back.
    runtime.answer["web-0"] = "success"
    rounds = kubelet.probe_rounds(ns, "web-0", "readiness")
    await clock.advance(PERIOD)
    await asyncio.wait_for(kubelet.wait_for_probe_rounds(ns, "web-0", "readiness", rounds + 1), WAIT)
    await wait_for(
        client,
        resources.ENDPOINTSLICES,
        ns,
        lambda s: (endpoint_conditions(s, "web-0") or {}).get("ready") is True,
        label_selector=selector,
    )

    # Graceful deletion: the kubelet stops the Pod and removes it; the endpoint goes with it.
    await client.delete(resources.PODS, "web-0", ns)
    await wait_gone(client, resources.PODS, "web-0", ns)
    await wait_for(
        client, resources.ENDPOINTSLICES, ns, lambda s: not s.get("endpoints"), label_selector=selector
    )
    assert not simulator.addresses.in_use(ip)


async def test_liveness_failure_restarts_the_container(
    sim: tuple[Simulator, WebRuntime, FakeClock, Client], ns: str
) -> None:
    simulator, runtime, clock, client = sim
    liveness = {"httpGet": {"path": "/ready", "port": "http"}, "periodSeconds": 10, "failureThreshold": 2}
    await client.create(resources.PODS, web_pod("live-0", livenessProbe=liveness), ns)
    pod = await wait_for(client, resources.PODS, ns, pod_ready, field_selector="metadata.name=live-0")
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 0

    runtime.answer["live-0"] = "dead"  # 200 is still a pass for httpGet: make the server go away instead
    await runtime.stop(pod, pod["status"]["podIP"])
    kubelet = simulator.kubelet
    for _ in range(2):
        rounds = kubelet.probe_rounds(ns, "live-0", "liveness")
        await clock.advance(10)
        await asyncio.wait_for(kubelet.wait_for_probe_rounds(ns, "live-0", "liveness", rounds + 1), WAIT)
    restarted = await wait_for(
        client,
        resources.PODS,
        ns,
        lambda p: p["status"]["containerStatuses"][0]["restartCount"] == 1,
        field_selector="metadata.name=live-0",
    )
    status = restarted["status"]["containerStatuses"][0]
    assert status["lastState"]["terminated"]["exitCode"] == 137 and "running" in status["state"]
    assert runtime.starts["live-0"] == 2


async def test_garbage_collection_background_and_orphan(
    sim: tuple[Simulator, WebRuntime, FakeClock, Client], ns: str
) -> None:
    _, _, _, client = sim
    owner = await client.create(
        resources.CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}}, ns
    )
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    for name in ("dep-a", "dep-b"):
        await client.create(
            resources.SECRETS,
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "ownerReferences": [ref]}},
            ns,
        )
    await client.delete(resources.CONFIGMAPS, "owner", ns)
    await wait_gone(client, resources.SECRETS, "dep-a", ns)
    await wait_gone(client, resources.SECRETS, "dep-b", ns)

    owner = await client.create(
        resources.CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner2"}}, ns
    )
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner2", "uid": owner["metadata"]["uid"]}
    await client.create(
        resources.SECRETS,
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kept", "ownerReferences": [ref]}},
        ns,
    )
    await client.delete(resources.CONFIGMAPS, "owner2", ns, propagation_policy="Orphan")
    await wait_gone(client, resources.CONFIGMAPS, "owner2", ns)
    kept = await wait_for(
        client,
        resources.SECRETS,
        ns,
        lambda s: not s["metadata"].get("ownerReferences"),
        field_selector="metadata.name=kept",
    )
    assert kept["metadata"]["name"] == "kept"


@pytest.mark.parametrize("count", [1])
async def test_dangling_owner_reference_is_collected(
    sim: tuple[Simulator, WebRuntime, FakeClock, Client], ns: str, count: int
) -> None:
    _, _, _, client = sim
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "never-existed", "uid": "00000000-dead"}
    await client.create(
        resources.CONFIGMAPS,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "orphaned", "ownerReferences": [ref]}},
        ns,
    )
    await wait_gone(client, resources.CONFIGMAPS, "orphaned", ns)


async def test_foreground_deletion_waits_for_blocking_dependents(
    sim: tuple[Simulator, WebRuntime, FakeClock, Client], ns: str
) -> None:
    _, _, _, client = sim
    owner = await client.create(
        resources.CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fg"}}, ns
    )
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "fg",
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": True,
    }
    await client.create(
        resources.SECRETS,
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "fg-child", "ownerReferences": [ref]}},
        ns,
    )
    await client.delete(resources.CONFIGMAPS, "fg", ns, propagation_policy="Foreground")
    await wait_gone(client, resources.SECRETS, "fg-child", ns)
    await wait_gone(client, resources.CONFIGMAPS, "fg", ns)


async def test_terminating_pod_held_by_a_finalizer_is_a_terminating_endpoint(
    sim: tuple[Simulator, WebRuntime, FakeClock, Client], ns: str
) -> None:
    _, runtime, _, client = sim
    await client.create(
        resources.SERVICES,
        service("held", {"app": "web"}, {"port": 80, "targetPort": 8080}),
        ns,
    )
    body = web_pod("held-0", readinessProbe=READINESS)
    body["metadata"]["finalizers"] = ["example.com/hold"]
    await client.create(resources.PODS, body, ns)
    await wait_for(client, resources.PODS, ns, pod_ready, field_selector="metadata.name=held-0")
    await client.delete(resources.PODS, "held-0", ns)
    selector = "kubernetes.io/service-name=held"
    slice_ = await wait_for(
        client,
        resources.ENDPOINTSLICES,
        ns,
        lambda s: (endpoint_conditions(s, "held-0") or {}).get("terminating") is True,
        label_selector=selector,
    )
    assert endpoint_conditions(slice_, "held-0") == {"ready": False, "serving": True, "terminating": True}
    assert slice_["ports"] == [{"name": "", "port": 8080, "protocol": "TCP"}]
    # the kubelet stops the containers, then deletes with gracePeriodSeconds=0 (the finalizer holds on)
    pod = await wait_for(
        client,
        resources.PODS,
        ns,
        lambda p: p["metadata"].get("deletionGracePeriodSeconds") == 0,
        field_selector="metadata.name=held-0",
    )
    assert not runtime.servers.serves(pod)
    await client.patch(resources.PODS, "held-0", {"metadata": {"finalizers": None}}, ns)
    await wait_gone(client, resources.PODS, "held-0", ns)
    await wait_for(
        client, resources.ENDPOINTSLICES, ns, lambda s: not s.get("endpoints"), label_selector=selector
    )


@pytest.mark.builtin_only(reason="fails the simulator's status, binding and EndpointSlice writes on cue")
async def test_status_write_errors_are_retried(
    env: Environment, sim: tuple[Simulator, WebRuntime, FakeClock, Client], ns: str
) -> None:
    _, _, _, client = sim
    assert env.server is not None
    status_fault = env.server.inject("PUT", rf"/namespaces/{ns}/pods/flaky-0/status$", 500, count=2)
    slice_fault = env.server.inject("POST", rf"/namespaces/{ns}/endpointslices$", 503, count=1)
    bind_fault = env.server.inject("POST", rf"/namespaces/{ns}/pods/flaky-0/binding$", 500, count=1)
    await client.create(
        resources.SERVICES,
        service("flaky", {"app": "web"}, {"port": 80, "targetPort": 8080}),
        ns,
    )
    await client.create(resources.PODS, web_pod("flaky-0", readinessProbe=READINESS), ns)
    await wait_for(client, resources.PODS, ns, pod_ready, field_selector="metadata.name=flaky-0")
    await wait_for(
        client,
        resources.ENDPOINTSLICES,
        ns,
        lambda s: (endpoint_conditions(s, "flaky-0") or {}).get("ready") is True,
        label_selector="kubernetes.io/service-name=flaky",
    )
    # the errors happened and were survived
    assert (status_fault.hits, slice_fault.hits, bind_fault.hits) == (2, 1, 1)


async def test_startup_probe_gates_started_and_ready(
    sim: tuple[Simulator, WebRuntime, FakeClock, Client], ns: str
) -> None:
    simulator, runtime, clock, client = sim
    runtime.answer["slow-0"] = "warming up"
    startup = {**READINESS, "failureThreshold": 30}
    await client.create(resources.PODS, web_pod("slow-0", startupProbe=startup), ns)

    def container(p: dict[str, Any]) -> dict[str, Any]:
        statuses = p.get("status", {}).get("containerStatuses") or [{}]
        return dict(statuses[0])

    kubelet = simulator.kubelet
    await asyncio.wait_for(kubelet.wait_for_probe_rounds(ns, "slow-0", "startup", 1), WAIT)
    pod = await client.get(resources.PODS, "slow-0", ns)
    assert container(pod)["started"] is False and container(pod)["ready"] is False
    assert not pod_ready(pod)

    runtime.answer["slow-0"] = "success"
    await clock.advance(PERIOD)
    await asyncio.wait_for(kubelet.wait_for_probe_rounds(ns, "slow-0", "startup", 2), WAIT)
    pod = await wait_for(client, resources.PODS, ns, pod_ready, field_selector="metadata.name=slow-0")
    assert container(pod)["started"] is True and container(pod)["restartCount"] == 0
