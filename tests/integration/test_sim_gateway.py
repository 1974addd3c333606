"""The simulator's Gateway: status as implementations write it; weighted proxying to ready endpoints.

Every assertion reads the API server or an HTTP answer through the Gateway's own address; waits are
watches or bounded polls, never sleeps.
"""

from __future__ import annotations

import contextlib
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest_asyncio
from aiohttp import web

from kuberay_py.client import Client, NotFound, resources
from kuberay_py.envtest import Environment
from kuberay_py.envtest.sim.gateway import CONTROLLER_NAME
from tests.gateway_api import GATEWAY_CRD_DIR, gateway_class
from tests.polling import eventually
from tests.sim_harness import PodServers, running_simulator

WAIT = 20.0  # bound for eventual consistency on a loaded machine, not a performance assertion
GATEWAYS, HTTPROUTES, CLASSES = resources.GATEWAYS, resources.HTTPROUTES, resources.GATEWAYCLASSES


class NamedRuntime:
    """Pods answer every path on port 8080 with their own name."""

    def __init__(self) -> None:
        self._servers = PodServers()

    async def start(self, pod: dict[str, Any], ip: str) -> None:
        name = pod["metadata"]["name"]

        async def answer(request: web.Request) -> web.Response:
            return web.Response(text=f"{name} {request.method} {request.path_qs}")

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", answer)
        await self._servers.serve(pod, ip, app)

    async def stop(self, pod: dict[str, Any], ip: str) -> None:
        await self._servers.stop(pod)


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def env() -> AsyncIterator[Environment]:
    async with Environment([str(GATEWAY_CRD_DIR)]) as e:
        yield e


@pytest_asyncio.fixture(loop_scope="session")
async def setup(env: Environment) -> AsyncIterator[tuple[Client, str, str]]:
    async with running_simulator(env, pod_runtime=NamedRuntime()) as simulator:
        assert simulator.gateway.served
        client = env.new_client()
        ns = await env.create_namespace()
        class_name = f"sim-{uuid.uuid4().hex[:6]}"
        await client.create(CLASSES, gateway_class(class_name))
        try:
            yield client, ns, class_name
        finally:
            with contextlib.suppress(NotFound):
                await client.delete(CLASSES, class_name)
            await env.delete_namespace(ns)
            await client.close()


async def until(what: str, probe: Callable[[], Any]) -> Any:
    """Poll ``probe`` (an async callable returning a truthy value when done), bounded by WAIT."""
    return await eventually(probe, what, WAIT, tolerate=())


def cond(conditions: list[dict[str, Any]] | None, kind: str) -> dict[str, Any]:
    return next((c for c in conditions or [] if c.get("type") == kind), {})


def pod(name: str, app: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {
            "containers": [
                {"name": "web", "image": "example/web:1", "ports": [{"name": "http", "containerPort": 8080}]}
            ]
        },
    }


def service(name: str, app: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": {"app": app}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]},
    }


def route(name: str, gateway: str, weights: dict[str, int]) -> dict[str, Any]:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": name},
        "spec": {
            "parentRefs": [{"name": gateway}],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                    "backendRefs": [{"name": svc, "port": 80, "weight": w} for svc, w in weights.items()],
                }
            ],
        },
    }


async def ready_endpoints(client: Client, ns: str, service_name: str) -> int:
    slices = await client.list(
        resources.ENDPOINTSLICES, ns, label_selector=f"kubernetes.io/service-name={service_name}"
    )
    return sum(
        1
        for s in slices["items"]
        for e in s.get("endpoints") or []
        if (e.get("conditions") or {}).get("ready")
    )


async def shares(http: aiohttp.ClientSession, url: str, n: int) -> Counter[str]:
    counts: Counter[str] = Counter()
    for _ in range(n):
        async with http.get(url) as r:
            counts[(await r.text()).split()[0] if r.status == 200 else str(r.status)] += 1
    return counts


async def route_programmed(client: Client, ns: str, name: str) -> dict[str, Any] | None:
    """The route once our parent status has caught up with its generation."""
    obj = await client.get(HTTPROUTES, name, ns)
    for parent in (obj.get("status") or {}).get("parents") or []:
        if parent.get("controllerName") != CONTROLLER_NAME:
            continue
        accepted = cond(parent.get("conditions"), "Accepted")
        if accepted.get("observedGeneration") == obj["metadata"]["generation"]:
            return dict(obj)
    return None


async def test_gateway_status_and_weighted_traffic(setup: tuple[Client, str, str]) -> None:
    client, ns, class_name = setup
    for name, app in (("blue-0", "blue"), ("green-0", "green")):
        await client.create(resources.PODS, pod(name, app), ns)
    for app in ("blue", "green"):
        await client.create(resources.SERVICES, service(app, app), ns)
    gw_body = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": "gw"},
        "spec": {
            "gatewayClassName": class_name,
            "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}],
        },
    }
    await client.create(GATEWAYS, gw_body, ns)
    await client.create(HTTPROUTES, route("r", "gw", {"blue": 75, "green": 25}), ns)

    gc = await until("class accepted", lambda: _accepted_class(client, class_name))
    assert cond(gc["status"]["conditions"], "SupportedVersion")["status"] == "True"

    async def gateway_ready() -> dict[str, Any] | None:
        obj = await client.get(GATEWAYS, "gw", ns)
        status = obj.get("status") or {}
        ok = all(
            cond(status.get("conditions"), t).get("status") == "True" for t in ("Accepted", "Programmed")
        )
        listeners = status.get("listeners") or []
        return (
            dict(obj)
            if ok and status.get("addresses") and listeners and listeners[0]["attachedRoutes"] == 1
            else None
        )

    gw = await until("gateway programmed", gateway_ready)
    (address,) = gw["status"]["addresses"]
    assert address["type"] == "IPAddress"
    (listener,) = gw["status"]["listeners"]
    assert listener["supportedKinds"] == [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute"}]
    assert {c["type"]: c["status"] for c in listener["conditions"]} == {
        "Accepted": "True",
        "Programmed": "True",
        "ResolvedRefs": "True",
        "Conflicted": "False",
    }
    r = await until("route programmed", lambda: route_programmed(client, ns, "r"))
    (parent,) = r["status"]["parents"]
    assert parent["parentRef"] == {"name": "gw", "group": "gateway.networking.k8s.io", "kind": "Gateway"}
    assert cond(parent["conditions"], "ResolvedRefs")["status"] == "True"

    for svc in ("blue", "green"):
        await until(f"{svc} endpoint ready", lambda svc=svc: ready_endpoints(client, ns, svc))
    url = f"http://{address['value']}:80/anything?x=1"
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as http:
        async with http.post(url, data=b"hi") as resp:
            assert resp.status == 200 and (await resp.text()).split()[1:] == ["POST", "/anything?x=1"]
        # Smooth weighted round robin: any 100 consecutive requests split exactly 75/25.
        assert await shares(http, url, 100) == Counter({"blue-0": 75, "green-0": 25})

        await client.patch(
            HTTPROUTES,
            "r",
            {"spec": route("r", "gw", {"blue": 0, "green": 100})["spec"]},
            ns,
            patch_type="merge",
        )
        await until("new weights programmed", lambda: route_programmed(client, ns, "r"))
        assert await shares(http, url, 20) == Counter({"green-0": 20})

        # No ready endpoint behind the chosen backend: 503, as Envoy answers.
        await client.delete(resources.PODS, "green-0", ns, grace_period_seconds=0)

        async def green_empty() -> bool:
            return await ready_endpoints(client, ns, "green") == 0

        await until("green endpoints gone", green_empty)
        async with http.get(url) as resp:
            assert resp.status == 503 and await resp.text() == "no healthy upstream"

        # A backend Service that does not exist: ResolvedRefs False, and its share answers 500.
        await client.patch(
            HTTPROUTES, "r", {"spec": route("r", "gw", {"missing": 1})["spec"]}, ns, patch_type="merge"
        )
        r = await until("missing backend reported", lambda: route_programmed(client, ns, "r"))
        refs = cond(r["status"]["parents"][0]["conditions"], "ResolvedRefs")
        assert (refs["status"], refs["reason"]) == ("False", "BackendNotFound")
        async with http.get(url) as resp:
            assert resp.status == 500


async def test_gateway_of_another_class_is_left_alone(setup: tuple[Client, str, str]) -> None:
    client, ns, _ = setup
    body = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": "other"},
        "spec": {
            "gatewayClassName": "istio",
            "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}],
        },
    }
    created = await client.create(GATEWAYS, body, ns)
    # The API server's default status says Pending; nothing of ours may replace it.
    assert cond(created["status"]["conditions"], "Accepted")["reason"] == "Pending"
    marker = await client.create(
        GATEWAYS,
        {**body, "metadata": {"name": "mine"}, "spec": {**body["spec"], "gatewayClassName": setup[2]}},
        ns,
    )
    assert marker

    async def mine_programmed() -> bool:
        obj = await client.get(GATEWAYS, "mine", ns)
        return cond((obj.get("status") or {}).get("conditions"), "Programmed").get("status") == "True"

    await until("our gateway programmed", mine_programmed)  # a round ran after both existed
    other = await client.get(GATEWAYS, "other", ns)
    assert cond(other["status"]["conditions"], "Accepted")["reason"] == "Pending"


async def _accepted_class(client: Client, name: str) -> dict[str, Any] | None:
    obj = await client.get(CLASSES, name)
    return (
        dict(obj)
        if cond((obj.get("status") or {}).get("conditions"), "Accepted").get("status") == "True"
        else None
    )


async def test_without_the_gateway_api_the_simulator_runs_without_it() -> None:
    async with Environment() as bare:
        async with running_simulator(bare, pod_runtime=NamedRuntime()) as simulator:
            assert simulator.gateway.served is False
