"""Config changes on a running fake Serve: in-place, rolling replacement, deletion, proxy placement."""

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from controllers.raysim import RayPodRuntime
from kuberay_py.clock import FakeClock
from tests.unit.raysim.fake_nodes import fake_cluster, fruit_config, get, ray_pod, step

BASE = "127.1.211"
HEAD, W1, W2 = f"{BASE}.1", f"{BASE}.2", f"{BASE}.3"


@pytest.fixture
async def cluster() -> AsyncIterator[tuple[RayPodRuntime, FakeClock]]:
    async with fake_cluster(HEAD, [W1, W2]) as running:
        yield running


async def doc(http: aiohttp.ClientSession) -> dict[str, Any]:
    async with http.get(f"http://{HEAD}:8265/api/serve/applications/") as r:
        return await r.json()  # type: ignore[no-any-return]


async def put_to(http: aiohttp.ClientSession, body: dict[str, Any]) -> None:
    async with http.put(f"http://{HEAD}:8265/api/serve/applications/", json=body) as r:
        assert r.status == 200


def replicas(d: dict[str, Any]) -> list[dict[str, Any]]:
    return list(d["applications"]["fruit_app"]["deployments"]["Fruit"]["replicas"])


async def test_user_config_in_place_and_actor_options_roll(
    cluster: tuple[RayPodRuntime, FakeClock], http: aiohttp.ClientSession
) -> None:
    runtime, clock = cluster
    await put_to(http, fruit_config(2))
    await step(runtime, clock, 3.0)
    before = {r["replica_id"] for r in replicas(await doc(http))}

    await put_to(http, fruit_config(2, user_config={"price": 5}))
    d = await doc(http)
    assert {r["replica_id"] for r in replicas(d)} == before  # reconfigured in place
    assert d["applications"]["fruit_app"]["status"] == "RUNNING"
    assert (await get(http, f"http://{W1}:8000/fruit"))[1] == '{"fruit": "mango", "price": 5}'

    # CPU change: a rolling replacement, one replica at a time (20% of the target, at least one):
    # an old replica stops, a new one starts in its place, and so on; traffic keeps flowing.
    await put_to(http, fruit_config(2, ray_actor_options={"num_cpus": 0.25}))
    d = await doc(http)
    assert d["applications"]["fruit_app"]["status"] == "DEPLOYING"
    states = sorted((r["replica_id"] in before, r["state"]) for r in replicas(d))
    assert states == [(False, "STARTING"), (True, "RUNNING")]
    assert (await get(http, f"http://{W2}:8000/fruit"))[0] == 200
    await step(runtime, clock, 1.0)
    states = sorted((r["replica_id"] in before, r["state"]) for r in replicas(await doc(http)))
    assert states == [(False, "RUNNING"), (False, "STARTING")]
    await step(runtime, clock, 1.0)
    d = await doc(http)
    assert d["applications"]["fruit_app"]["status"] == "RUNNING"
    ids = {r["replica_id"] for r in replicas(d)}
    assert len(ids) == 2 and not ids & before
    assert d["applications"]["fruit_app"]["deployments"]["Fruit"]["required_resources"] == {"CPU": 0.25}


async def test_rescale_during_drain_restores_the_proxy(
    cluster: tuple[RayPodRuntime, FakeClock], http: aiohttp.ClientSession
) -> None:
    runtime, clock = cluster
    await put_to(http, fruit_config(2))
    await step(runtime, clock, 3.0)
    await put_to(http, fruit_config(1))
    (kept,) = [r["node_ip"] for r in replicas(await doc(http))]
    drained = W2 if kept == W1 else W1
    assert await get(http, f"http://{drained}:8000/-/healthz") == (503, "This node is being drained.")
    await put_to(http, fruit_config(2))
    await step(runtime, clock, 1.0)
    assert await get(http, f"http://{drained}:8000/-/healthz") == (200, "success")
    statuses = {p["node_ip"]: p["status"] for p in (await doc(http))["proxies"].values()}
    assert statuses == {HEAD: "HEALTHY", W1: "HEALTHY", W2: "HEALTHY"}


async def test_declarative_put_removes_apps_and_delete_shuts_serve_down(
    cluster: tuple[RayPodRuntime, FakeClock], http: aiohttp.ClientSession
) -> None:
    runtime, clock = cluster
    two = fruit_config(1)
    two["applications"].append(
        {
            "name": "math_app",
            "import_path": "conditional_dag.serve_dag",
            "route_prefix": "/calc",
            "deployments": [
                {"name": n, "ray_actor_options": {"num_cpus": 0.1}} for n in ("Adder", "Multiplier", "Router")
            ],
        }
    )
    await put_to(http, two)
    await step(runtime, clock, 3.0)
    assert set((await doc(http))["applications"]) == {"fruit_app", "math_app"}
    async with http.post(f"http://{HEAD}:8000/calc", json=["MUL", 3]) as r:
        assert await r.text() == "3 pizzas please!"  # factor defaults to 1 without user_config
    await put_to(http, fruit_config(1))
    assert set((await doc(http))["applications"]) == {"fruit_app"}
    assert (await get(http, f"http://{HEAD}:8000/calc"))[0] == 404

    async with http.delete(f"http://{HEAD}:8265/api/serve/applications/") as r:
        assert r.status == 200
    assert (await doc(http))["applications"] == {}
    assert (await get(http, f"http://{HEAD}:8000/-/healthz"))[0] is None


async def test_head_only_proxies_and_request_timeout(
    cluster: tuple[RayPodRuntime, FakeClock], http: aiohttp.ClientSession
) -> None:
    runtime, clock = cluster
    cfg = fruit_config(2, ray_actor_options={"num_cpus": 2})  # no node has 2 CPUs: never placed
    cfg["proxy_location"] = "HeadOnly"
    cfg["http_options"]["request_timeout_s"] = 5
    await put_to(http, cfg)
    await step(runtime, clock, 2.0)  # deployments exist, no replica can run
    assert await get(http, f"http://{HEAD}:8000/-/healthz") == (200, "success")
    assert (await get(http, f"http://{W1}:8000/-/healthz"))[0] is None  # HeadOnly: no worker proxy

    cluster_sim = runtime.cluster("ns", "rc")
    pending = asyncio.ensure_future(get(http, f"http://{HEAD}:8000/fruit"))
    await asyncio.wait_for(cluster_sim.request_waiting.wait(), 5)  # waits for a replica, as Ray's proxy does
    assert not pending.done()
    await clock.advance(5.0)
    assert await asyncio.wait_for(pending, 5) == (408, "Request timed out after 5s.")


async def test_fixing_a_failed_app_redeploys_it(
    cluster: tuple[RayPodRuntime, FakeClock], http: aiohttp.ClientSession
) -> None:
    runtime, clock = cluster
    bad = fruit_config(1)
    bad["applications"][0]["deployments"][0]["name"] = "NotThere"
    await put_to(http, bad)
    await step(runtime, clock, 2.0)
    app = (await doc(http))["applications"]["fruit_app"]
    assert app["status"] == "DEPLOY_FAILED"
    assert "ValueError: Deployment 'NotThere' does not exist. Available: ['Fruit']" in app["message"]
    await put_to(http, fruit_config(1))
    assert (await doc(http))["applications"]["fruit_app"]["status"] == "DEPLOYING"
    await step(runtime, clock, 3.0)
    assert (await doc(http))["applications"]["fruit_app"]["status"] == "RUNNING"


async def test_a_failed_redeploy_keeps_the_previous_deployments_serving(
    cluster: tuple[RayPodRuntime, FakeClock], http: aiohttp.ClientSession
) -> None:
    runtime, clock = cluster
    await put_to(http, fruit_config(1))
    await step(runtime, clock, 3.0)
    broken = fruit_config(1)
    broken["applications"][0]["import_path"] = "fruit_v2:app"
    await put_to(http, broken)
    await step(runtime, clock, 2.0)
    app = (await doc(http))["applications"]["fruit_app"]
    assert app["status"] == "DEPLOY_FAILED"
    assert "No module named 'fruit_v2'" in app["message"]
    assert app["deployments"]["Fruit"]["status"] == "HEALTHY"
    assert (await get(http, f"http://{HEAD}:8000/fruit"))[0] == 200


async def test_draining_a_worker_migrates_its_replica_then_stops_its_proxy(
    cluster: tuple[RayPodRuntime, FakeClock], http: aiohttp.ClientSession
) -> None:
    runtime, clock = cluster
    await put_to(http, fruit_config(1))
    await step(runtime, clock, 3.0)
    (replica,) = replicas(await doc(http))
    holder = replica["node_ip"]
    other = W2 if holder == W1 else W1
    pod = ray_pod("worker-0" if holder == W1 else "worker-1", "worker", "1")

    drain = asyncio.ensure_future(runtime.drain(pod, holder))
    await step(runtime, clock, 0.0)
    assert await get(http, f"http://{holder}:8000/-/healthz") == (503, "This node is being drained.")
    states = {(r["node_ip"], r["state"]) for r in replicas(await doc(http))}
    assert states == {(holder, "RUNNING"), (other, "STARTING")}  # the old one serves until the new runs
    assert (await get(http, f"http://{holder}:8000/fruit"))[0] == 200

    await step(runtime, clock, 1.0)
    assert {(r["node_ip"], r["state"]) for r in replicas(await doc(http))} == {(other, "RUNNING")}
    assert not drain.done()  # the proxy's drain window is still open
    await step(runtime, clock, 30.0)
    await asyncio.wait_for(drain, 5)
    assert (await get(http, f"http://{holder}:8000/-/healthz"))[0] is None
    assert (await doc(http))["applications"]["fruit_app"]["status"] == "RUNNING"
