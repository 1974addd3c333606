"""Serve's top-level target_capacity on the fake cluster: replicas scaled by it, proxies drained."""

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from controllers.raysim import RayPodRuntime
from controllers.raysim.serve_state import capacity_adjusted
from kuberay_py.clock import FakeClock
from tests.unit.raysim.fake_nodes import fake_cluster, fruit_config, get, step

BASE = "127.1.212"
HEAD, W1, W2 = f"{BASE}.1", f"{BASE}.2", f"{BASE}.3"
SERVE_API = f"http://{HEAD}:8265/api/serve/applications/"


@pytest.fixture
async def cluster() -> AsyncIterator[tuple[RayPodRuntime, FakeClock]]:
    async with fake_cluster(HEAD, [W1, W2]) as running:
        yield running


async def put(http: aiohttp.ClientSession, capacity: float | None) -> dict[str, Any]:
    body = fruit_config(4)
    if capacity is not None:
        body["target_capacity"] = capacity
    async with http.put(SERVE_API, json=body) as r:
        assert r.status == 200, await r.text()
    async with http.get(SERVE_API) as r:
        return await r.json()  # type: ignore[no-any-return]


def fruit(doc: dict[str, Any]) -> dict[str, Any]:
    return dict(doc["applications"]["fruit_app"]["deployments"]["Fruit"])


@pytest.mark.parametrize(
    ("replicas", "capacity", "expected"),
    [(4, None, 4), (4, 100, 4), (4, 50, 2), (3, 50, 2), (4, 10, 1), (1, 1, 1), (4, 0, 0), (0, 50, 0)],
)
def test_capacity_adjusted_rounds_half_up_and_keeps_one(
    replicas: int, capacity: float | None, expected: int
) -> None:
    assert capacity_adjusted(replicas, capacity) == expected


async def test_target_capacity_scales_replicas_and_drains_proxies(
    cluster: tuple[RayPodRuntime, FakeClock], http: aiohttp.ClientSession
) -> None:
    runtime, clock = cluster
    doc = await put(http, 50)
    await step(runtime, clock, 3.0)
    async with http.get(SERVE_API) as r:
        doc = await r.json()
    assert doc["target_capacity"] == 50
    dep = fruit(doc)
    assert dep["target_num_replicas"] == 2 and dep["deployment_config"]["num_replicas"] == 4
    assert [r["state"] for r in dep["replicas"]] == ["RUNNING", "RUNNING"]
    assert doc["applications"]["fruit_app"]["status"] == "RUNNING"

    doc = await put(http, 100)  # only target_capacity changed: rescaled in place, nothing rebuilt
    assert fruit(doc)["target_num_replicas"] == 4 and fruit(doc)["status"] == "UPSCALING"
    await step(runtime, clock, 3.0)
    async with http.get(SERVE_API) as r:
        doc = await r.json()
    assert sorted(r["state"] for r in fruit(doc)["replicas"]) == ["RUNNING"] * 4
    assert {r["node_ip"] for r in fruit(doc)["replicas"]} == {W1, W2}

    doc = await put(http, 0)
    assert doc["target_capacity"] == 0 and fruit(doc)["replicas"] == []
    # Both workers lost their replicas: their proxies drain (503 on /-/healthz), the head's stays.
    for worker in (W1, W2):
        assert await get(http, f"http://{worker}:8000/-/healthz") == (503, "This node is being drained.")
    assert (await get(http, f"http://{HEAD}:8000/-/healthz"))[0] == 200

    doc = await put(http, None)  # unset: back to the configured replica count
    assert doc["target_capacity"] is None and fruit(doc)["target_num_replicas"] == 4
