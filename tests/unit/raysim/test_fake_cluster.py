"""Fake Ray nodes over real loopback sockets, stepped with a FakeClock (no sleeps)."""

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest

from controllers.raysim import RayPodRuntime
from kuberay_py.clock import FakeClock
from tests.unit.raysim.fake_nodes import TIMINGS, fake_cluster, fruit_config, get, ray_pod, step

BASE = "127.1.210"
HEAD = f"{BASE}.1"
WORKERS = [f"{BASE}.{i}" for i in (2, 3, 4)]


@pytest.fixture
async def cluster() -> AsyncIterator[tuple[RayPodRuntime, FakeClock]]:
    async with fake_cluster(HEAD, WORKERS) as running:
        yield running


async def put(http: aiohttp.ClientSession, body: Any, **kw: Any) -> tuple[int, str]:
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    async with http.put(f"http://{HEAD}:8265/api/serve/applications/", data=data, **kw) as r:
        return r.status, await r.text()


async def serve_doc(http: aiohttp.ClientSession) -> dict:
    async with http.get(f"http://{HEAD}:8265/api/serve/applications/?api_type=declarative") as r:
        assert r.status == 200
        return await r.json()  # type: ignore[no-any-return]


async def test_health_endpoints_on_every_node(
    cluster: tuple[RayPodRuntime, FakeClock], http: aiohttp.ClientSession
) -> None:
    for ip in [HEAD, *WORKERS]:
        assert await get(http, f"http://{ip}:52365/api/local_raylet_healthz") == (200, "success")
    assert await get(http, f"http://{HEAD}:8265/api/gcs_healthz") == (200, "success")
    assert await get(http, f"http://{HEAD}:52365/api/healthz") == (200, "raylet: success\ngcs: success")
    assert (await get(http, f"http://{WORKERS[0]}:8265/api/gcs_healthz"))[0] is None  # head-only port
    runtime, _ = cluster
    runtime.faults("ns", "worker-0").raylet_down = True
    assert (await get(http, f"http://{WORKERS[0]}:52365/api/local_raylet_healthz"))[0] == 503


async def test_deploy_spread_scale_down_and_drain(
    cluster: tuple[RayPodRuntime, FakeClock], http: aiohttp.ClientSession
) -> None:
    runtime, clock = cluster
    assert await serve_doc(http) == {
        "controller_info": {},
        "proxies": {},
        "applications": {},
        "target_capacity": None,
    }
    assert (await get(http, f"http://{HEAD}:8000/-/healthz"))[0] is None  # no Serve, no proxy

    assert await put(http, fruit_config(3)) == (200, "")
    doc = await serve_doc(http)
    assert doc["applications"]["fruit_app"]["status"] == "DEPLOYING"
    assert doc["applications"]["fruit_app"]["deployments"] == {}
    assert await get(http, f"http://{HEAD}:8000/-/healthz") == (503, "Route table is not populated yet.")

    await step(runtime, clock, 2.0)  # import done: deployments created, replicas placed
    dep = (await serve_doc(http))["applications"]["fruit_app"]["deployments"]["Fruit"]
    assert dep["status"] == "UPDATING"
    assert sorted(r["node_ip"] for r in dep["replicas"]) == WORKERS  # spread; head has num-cpus 0
    assert await get(http, f"http://{HEAD}:8000/-/healthz") == (200, "success")
    assert await get(http, f"http://{WORKERS[0]}:8000/-/healthz") == (503, "No replicas are available yet.")

    await step(runtime, clock, 1.0)  # replicas RUNNING
    doc = await serve_doc(http)
    app = doc["applications"]["fruit_app"]
    assert app["status"] == "RUNNING" and app["deployments"]["Fruit"]["status"] == "HEALTHY"
    assert app["deployments"]["Fruit"]["status_trigger"] == "CONFIG_UPDATE_COMPLETED"
    assert len(doc["proxies"]) == 4 and {p["status"] for p in doc["proxies"].values()} == {"HEALTHY"}
    for ip in [HEAD, *WORKERS]:
        assert await get(http, f"http://{ip}:8000/-/healthz") == (200, "success")
    assert await get(http, f"http://{WORKERS[1]}:8000/-/routes") == (200, '{"/fruit": "fruit_app"}')
    status, body = await get(http, f"http://{WORKERS[1]}:8000/fruit")
    assert status == 200 and orjson.loads(body)["fruit"] == "mango"
    assert (await get(http, f"http://{HEAD}:8000/nope"))[0] == 404

    assert await put(http, fruit_config(1)) == (200, "")
    doc = await serve_doc(http)
    dep = doc["applications"]["fruit_app"]["deployments"]["Fruit"]
    assert dep["target_num_replicas"] == 1 and len(dep["replicas"]) == 1
    (kept,) = [r["node_ip"] for r in dep["replicas"]]
    drained = [ip for ip in WORKERS if ip != kept]
    for ip in drained:
        assert await get(http, f"http://{ip}:8000/-/healthz") == (503, "This node is being drained.")
        status, _ = await get(http, f"http://{ip}:8000/fruit")
        assert status == 200  # a draining proxy still forwards traffic
    assert await get(http, f"http://{kept}:8000/-/healthz") == (200, "success")
    assert doc["applications"]["fruit_app"]["status"] == "RUNNING"
    assert dep["status_trigger"] == "DOWNSCALE_COMPLETED"

    await step(runtime, clock, 29.0)
    assert (await get(http, f"http://{drained[0]}:8000/-/healthz"))[0] == 503
    await step(runtime, clock, 1.0)  # drain window over: the proxy is gone
    for ip in drained:
        assert (await get(http, f"http://{ip}:8000/-/healthz"))[0] is None
    assert len((await serve_doc(http))["proxies"]) == 2


async def test_bad_input_and_failed_imports(
    cluster: tuple[RayPodRuntime, FakeClock], http: aiohttp.ClientSession
) -> None:
    runtime, clock = cluster
    status, text = await put(http, b'{"applications": [ {not json')
    assert status == 500 and "JSONDecodeError" in text
    status, text = await put(http, {})
    assert status == 400 and "Field required" in text
    assert await serve_doc(http) == {
        "controller_info": {},
        "proxies": {},
        "applications": {},
        "target_capacity": None,
    }

    bad = {
        "applications": [
            {"name": "bad_app", "import_path": "no_such_module:app", "route_prefix": "/bad"},
            {"name": "slash", "import_path": "fruit:app", "route_prefix": "x"},
        ]
    }
    assert await put(http, bad) == (200, "")
    await step(runtime, clock, 2.0)
    apps = (await serve_doc(http))["applications"]
    assert apps["bad_app"]["status"] == "DEPLOY_FAILED"
    assert apps["bad_app"]["route_prefix"] is None and apps["bad_app"]["deployments"] == {}
    assert apps["bad_app"]["message"].startswith("Deploying app 'bad_app' failed with exception:\nTraceback")
    assert "ModuleNotFoundError: No module named 'no_such_module'" in apps["bad_app"]["message"]
    assert "Invalid route_prefix 'x', must start with a forward slash ('/')." in apps["slash"]["message"]


async def test_max_replicas_per_node_and_cpu_limits(
    cluster: tuple[RayPodRuntime, FakeClock], http: aiohttp.ClientSession
) -> None:
    runtime, clock = cluster
    # 3 workers x 1 CPU, 0.5 CPU each, at most one per node: the 4th and 5th cannot be placed.
    assert await put(http, fruit_config(5, max_replicas_per_node=1)) == (200, "")
    await step(runtime, clock, 2.0)
    await step(runtime, clock, 1.0)
    dep = (await serve_doc(http))["applications"]["fruit_app"]["deployments"]["Fruit"]
    placed = [r for r in dep["replicas"] if "node_id" in r]
    waiting = [r for r in dep["replicas"] if "node_id" not in r]
    assert sorted(r["node_ip"] for r in placed) == WORKERS
    assert len(waiting) == 2 and set(waiting[0]) == {"actor_name", "replica_id", "state", "start_time_s"}
    assert all(r["state"] == "STARTING" for r in waiting)
    await step(runtime, clock, 30.0)
    dep = (await serve_doc(http))["applications"]["fruit_app"]["deployments"]["Fruit"]
    assert "has 2 replicas that have taken more than 30s to be scheduled" in dep["message"]


async def test_head_restart_loses_serve_state(
    cluster: tuple[RayPodRuntime, FakeClock], http: aiohttp.ClientSession
) -> None:
    runtime, clock = cluster
    await put(http, fruit_config(1))
    await step(runtime, clock, 3.0)
    assert (await serve_doc(http))["applications"]["fruit_app"]["status"] == "RUNNING"
    head = ray_pod("head", "head", "0")
    await runtime.stop(head, HEAD)
    assert (await get(http, f"http://{HEAD}:8265/api/gcs_healthz"))[0] is None
    await runtime.start(head, HEAD)
    assert (await serve_doc(http))["applications"] == {}


async def test_token_auth_guards_the_serve_api_but_not_health() -> None:
    """Ray 2.60's middleware: 401 with no token, 403 with a wrong one; either header works."""
    runtime = RayPodRuntime(clock=FakeClock(), timings=TIMINGS)
    env = [{"name": "RAY_AUTH_MODE", "value": "token"}, {"name": "RAY_AUTH_TOKEN", "value": "s3cret"}]
    ip = f"{BASE}.9"
    await runtime.start(ray_pod("h", "head", "1", cluster="auth", env=env), ip)
    apps = f"http://{ip}:8265/api/serve/applications/"
    try:
        async with aiohttp.ClientSession() as http:
            assert await get(http, apps) == (401, "Unauthorized: Missing authentication token")
            wrong = await get(http, apps, headers={"authorization": "Bearer nope"})
            assert wrong == (403, "Forbidden: Invalid authentication token")
            for header in ("authorization", "x-ray-authorization"):
                assert (await get(http, apps, headers={header: "Bearer s3cret"}))[0] == 200
            assert await get(http, f"http://{ip}:8265/api/gcs_healthz") == (200, "success")
    finally:
        await runtime.close()


async def test_token_auth_requires_the_token_its_secret_holds() -> None:
    """A ``RAY_AUTH_TOKEN`` read from a Secret is the Secret's value, as the kubelet resolves it;
    with token auth on and no token to be found, nothing is accepted."""
    runtime = RayPodRuntime(clock=FakeClock(), timings=TIMINGS)
    asked: list[tuple[str, str, str]] = []

    async def secret_value(namespace: str, name: str, key: str) -> str | None:
        asked.append((namespace, name, key))
        return "from-secret" if name == "rc-token" else None

    runtime.secret_value = secret_value
    ref = {"secretKeyRef": {"name": "rc-token", "key": "auth_token"}}
    env = [{"name": "RAY_AUTH_MODE", "value": "token"}, {"name": "RAY_AUTH_TOKEN", "valueFrom": ref}]
    gone = {"secretKeyRef": {"name": "gone", "key": "k"}}
    missing = [env[0], {"name": "RAY_AUTH_TOKEN", "valueFrom": gone}]
    ip, other = f"{BASE}.10", f"{BASE}.11"
    await runtime.start(ray_pod("h", "head", "1", cluster="sec", env=env), ip)
    await runtime.start(ray_pod("h2", "head", "1", cluster="nosec", env=missing), other)
    try:
        async with aiohttp.ClientSession() as http:
            apps = f"http://{ip}:8265/api/serve/applications/"
            assert (await get(http, apps, headers={"authorization": "Bearer from-secret"}))[0] == 200
            assert (await get(http, apps, headers={"authorization": "Bearer s3cret"}))[0] == 403
            lost = f"http://{other}:8265/api/serve/applications/"
            assert (await get(http, lost, headers={"authorization": "Bearer "}))[0] == 403
        assert asked == [("ns", "rc-token", "auth_token"), ("ns", "gone", "k")]
    finally:
        await runtime.close()
