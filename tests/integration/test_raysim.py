"""Fake Ray nodes inside the cluster simulator: KubeRay's probes and the serve Service's endpoints.

Pods carry KubeRay's exact probe commands (PR #1808 defaults) and a custom serve port (9000, as in
``ray-service.different-port.yaml``). Time is a FakeClock shared by the kubelet and the fake Ray
cluster, so probe periods, the Serve import, replica start-up and the proxy drain are stepped.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest_asyncio

from controllers.raysim import RayPodRuntime, Timings
from kuberay_py.client import Client, resources
from kuberay_py.clock import FakeClock
from kuberay_py.envtest import Environment
from kuberay_py.envtest.sim import Simulator
from tests.integration.test_simulator import WAIT, service, wait_for, wait_gone
from tests.sim_harness import running_simulator

RAYLET = "wget --tries 1 -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz | grep success"
GCS = "wget --tries 1 -T 10 -q -O- http://localhost:8265/api/gcs_healthz | grep success"
SERVE = "wget --tries 1 -T 10 -q -O- http://localhost:9000/-/healthz | grep success"
SELECTOR = "kubernetes.io/service-name=rc-serve-svc"


def ray_pod(name: str, node_type: str) -> dict[str, Any]:
    head = node_type == "head"
    start = (
        "ray start --head --dashboard-host=0.0.0.0 --num-cpus=0"
        if head
        else "ray start --address=x:6379 --num-cpus=1"
    )
    readiness = {
        "exec": {"command": ["bash", "-c", f"{RAYLET} && {GCS}" if head else f"{RAYLET} && {SERVE}"]},
        "initialDelaySeconds": 10,
        "timeoutSeconds": 5 if head else 2,
        "periodSeconds": 5,
        "successThreshold": 1,
        "failureThreshold": 10 if head else 1,
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {"ray.io/cluster": "rc", "ray.io/node-type": node_type, "ray.io/serve": "true"},
        },
        "spec": {
            "containers": [
                {
                    "name": "ray-head" if head else "ray-worker",
                    "image": "rayproject/ray:2.60.0",
                    "command": ["/bin/bash", "-c", "--"],
                    "args": [f"ulimit -n 65536; {start} --block --dashboard-agent-listen-port=52365"],
                    "ports": [{"name": "serve", "containerPort": 9000}],
                    "readinessProbe": readiness,
                }
            ]
        },
    }


def serve_config(replicas: int) -> dict[str, Any]:
    return {
        "http_options": {"port": 9000},
        "applications": [
            {
                "name": "fruit_app",
                "import_path": "fruit:app",
                "route_prefix": "/fruit",
                "deployments": [
                    {"name": "Fruit", "num_replicas": replicas, "ray_actor_options": {"num_cpus": 0.1}}
                ],
            }
        ],
    }


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def env() -> AsyncIterator[Environment]:
    async with Environment() as e:
        yield e


@pytest_asyncio.fixture(loop_scope="session")
async def world(env: Environment) -> AsyncIterator[tuple[Simulator, RayPodRuntime, FakeClock, Client, str]]:
    clock = FakeClock()
    runtime = RayPodRuntime(clock=clock, timings=Timings(build_s=2, replica_start_s=1, drain_s=30))
    client = env.new_client()
    try:
        async with running_simulator(env, pod_runtime=runtime, clock=clock) as simulator:
            ns = await env.create_namespace()
            try:
                yield simulator, runtime, clock, client, ns
            finally:
                await env.delete_namespace(ns)
    finally:
        await runtime.close()
        await client.close()


def ready_endpoints(slice_: dict[str, Any]) -> list[str]:
    return sorted(e["targetRef"]["name"] for e in slice_.get("endpoints") or [] if e["conditions"]["ready"])


async def probe_round(
    simulator: Simulator, clock: FakeClock, ns: str, pods: list[str], seconds: float
) -> None:
    """Advance time and wait until every Pod's readiness probe ran (and reported) once more."""
    before = {p: simulator.kubelet.probe_rounds(ns, p, "readiness") for p in pods}
    await clock.advance(seconds)
    for p in pods:
        await asyncio.wait_for(
            simulator.kubelet.wait_for_probe_rounds(ns, p, "readiness", before[p] + 1), WAIT
        )


async def test_serve_endpoints_follow_replicas_and_drain(
    world: tuple[Simulator, RayPodRuntime, FakeClock, Client, str],
) -> None:
    simulator, runtime, clock, client, ns = world
    await client.create(
        resources.SERVICES,
        service(
            "rc-serve-svc",
            {"ray.io/cluster": "rc", "ray.io/serve": "true"},
            {"name": "serve", "port": 9000, "targetPort": "serve"},
        ),
        ns,
    )
    pods = ["rc-head", "rc-worker-a", "rc-worker-b"]
    for name in pods:
        await client.create(resources.PODS, ray_pod(name, "head" if name == "rc-head" else "worker"), ns)
    for name in pods:
        await wait_for(
            client,
            resources.PODS,
            ns,
            lambda p: bool(p["status"].get("podIP")),
            field_selector=f"metadata.name={name}",
        )
    head = await client.get(resources.PODS, "rc-head", ns)
    head_ip = head["status"]["podIP"]

    await probe_round(simulator, clock, ns, pods, 10)  # initialDelaySeconds
    slice_ = await wait_for(
        client,
        resources.ENDPOINTSLICES,
        ns,
        lambda s: ready_endpoints(s) == ["rc-head"],
        label_selector=SELECTOR,
    )
    assert {p["port"] for p in slice_["ports"]} == {9000}  # the named port resolved per Pod

    async with aiohttp.ClientSession() as http:
        async with http.put(f"http://{head_ip}:8265/api/serve/applications/", json=serve_config(2)) as resp:
            assert resp.status == 200
        await clock.advance(2)  # the import
        await runtime.cluster(ns, "rc").tick()
        await clock.advance(1)  # replicas start
        await runtime.cluster(ns, "rc").tick()
        async with http.get(f"http://{head_ip}:8265/api/serve/applications/?api_type=declarative") as resp:
            assert (await resp.json())["applications"]["fruit_app"]["status"] == "RUNNING"

        await probe_round(simulator, clock, ns, pods, 5)
        slice_ = await wait_for(
            client,
            resources.ENDPOINTSLICES,
            ns,
            lambda s: ready_endpoints(s) == pods,
            label_selector=SELECTOR,
        )
        ips = {e["targetRef"]["name"]: e["addresses"][0] for e in slice_["endpoints"]}
        for ip in ips.values():  # every ready endpoint answers on the serve port
            async with http.get(f"http://{ip}:9000/fruit") as resp:
                assert resp.status == 200 and orjson.loads(await resp.read())["fruit"] == "mango"

        # num_replicas 2 -> 1 for the ingress: the worker left without replicas drains, its serve
        # readiness check (failureThreshold 1) fails at the next period and it leaves the Service.
        async with http.put(f"http://{head_ip}:8265/api/serve/applications/", json=serve_config(1)) as resp:
            assert resp.status == 200
        cluster = runtime.cluster(ns, "rc")
        holding = {cluster.controller.nodes[n].pod_name for n in cluster.controller.replica_nodes()}
        await probe_round(simulator, clock, ns, pods, 5)
        expected = sorted({"rc-head"} | holding)
        slice_ = await wait_for(
            client,
            resources.ENDPOINTSLICES,
            ns,
            lambda s: ready_endpoints(s) == expected,
            label_selector=SELECTOR,
        )
        assert len(expected) == 2, "the spread placed one replica per worker, so one worker drained"
        drained = next(p for p in pods if p not in expected)
        async with http.get(f"http://{ips[drained]}:9000/fruit") as resp:
            assert resp.status == 200  # still forwarding while draining


async def test_standalone_runner_serves_ray_pods(env: Environment) -> None:
    """``python -m controllers.raysim`` against an API server: a head Pod becomes Ready."""
    from controllers.raysim.__main__ import parse_args, run

    args = parse_args(["--kubeconfig", env.kubeconfig_path, "--probe-period-scale", "0.01"])
    stop = asyncio.Event()
    runner = asyncio.create_task(run(args, stop))
    client = env.new_client()
    ns = await env.create_namespace()
    try:
        await client.create(resources.PODS, ray_pod("solo-head", "head"), ns)
        pod = await wait_for(
            client,
            resources.PODS,
            ns,
            lambda p: any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in p.get("status", {}).get("conditions", [])
            ),
            field_selector="metadata.name=solo-head",
        )
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://{pod['status']['podIP']}:8265/api/gcs_healthz") as resp:
                assert resp.status == 200 and await resp.text() == "success"
    finally:
        stop.set()
        await asyncio.wait_for(runner, WAIT)
        await env.delete_namespace(ns)
        await client.close()


async def test_deleting_a_worker_drains_it_within_its_grace_period(
    world: tuple[Simulator, RayPodRuntime, FakeClock, Client, str],
) -> None:
    _, runtime, clock, client, ns = world
    pods = ["rc-head", "rc-worker-a", "rc-worker-b"]
    for name in pods:
        body = ray_pod(name, "head" if name == "rc-head" else "worker")
        body["spec"]["terminationGracePeriodSeconds"] = 60  # longer than the drain: the drain ends it
        await client.create(resources.PODS, body, ns)
    ips = {}
    for name in pods:
        pod = await wait_for(
            client,
            resources.PODS,
            ns,
            lambda p: bool(p["status"].get("podIP")),
            field_selector=f"metadata.name={name}",
        )
        ips[name] = pod["status"]["podIP"]
    cluster = runtime.cluster(ns, "rc")
    async with aiohttp.ClientSession() as http:
        async with http.put(
            f"http://{ips['rc-head']}:8265/api/serve/applications/", json=serve_config(1)
        ) as resp:
            assert resp.status == 200
        await clock.advance(3)
        await cluster.tick()
        (holder,) = {cluster.controller.nodes[n].pod_name for n in cluster.controller.replica_nodes()}
        other = next(p for p in pods[1:] if p != holder)

        await client.delete(resources.PODS, holder, ns)
        async with asyncio.timeout(WAIT):
            while True:  # the kubelet hands the node to the runtime's drain
                async with http.get(f"http://{ips[holder]}:9000/-/healthz") as resp:
                    if resp.status == 503:
                        assert await resp.text() == "This node is being drained."
                        break
                await cluster.tick()
        pod = await client.get(resources.PODS, holder, ns)
        assert pod["metadata"].get("deletionTimestamp")  # still terminating while it drains
        await clock.advance(1)  # the replacement replica starts on the other worker
        await cluster.tick()
        assert {cluster.controller.nodes[n].pod_name for n in cluster.controller.replica_nodes()} == {other}
        async with http.get(f"http://{ips[holder]}:9000/fruit") as resp:
            assert resp.status == 200  # the draining proxy still forwards
        await clock.advance(30)  # the proxy's drain window ends (31 s < 60 s grace): the Pod goes
        await wait_gone(client, resources.PODS, holder, ns)
