"""Probes against real listeners on a loopback address."""

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from kuberay_py.clock import FakeClock, settle
from kuberay_py.envtest.sim.probes import deadline, run_probe

IP = "127.1.200.1"


@pytest.fixture
async def server() -> AsyncIterator[dict[str, str]]:
    state = {"health": "success"}

    async def health(_: web.Request) -> web.Response:
        if state["health"] == "fail":
            return web.Response(status=503, text="unhealthy")
        return web.Response(text=state["health"])

    app = web.Application()
    app.router.add_get("/healthz", health)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, IP, 18080)
    await site.start()
    yield state
    await runner.cleanup()


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as s:
        yield s


CONTAINER = {"name": "c", "ports": [{"name": "http", "containerPort": 18080}]}


async def test_http_get_by_port_name(server: dict[str, str], session: aiohttp.ClientSession) -> None:
    probe = {"httpGet": {"path": "/healthz", "port": "http"}}
    assert (await run_probe(probe, CONTAINER, IP, session)).success
    server["health"] = "fail"
    outcome = await run_probe(probe, CONTAINER, IP, session)
    assert not outcome.success and "503" in outcome.message


async def test_exec_wget_grep_against_the_pod(server: dict[str, str], session: aiohttp.ClientSession) -> None:
    probe = {
        "exec": {"command": ["bash", "-c", "wget -T 2 -q -O- http://localhost:18080/healthz | grep success"]}
    }
    assert (await run_probe(probe, CONTAINER, IP, session)).success
    server["health"] = "starting"  # 200, but not the word
    assert not (await run_probe(probe, CONTAINER, IP, session)).success


async def test_tcp_socket_and_refused_ports(server: dict[str, str], session: aiohttp.ClientSession) -> None:
    assert (await run_probe({"tcpSocket": {"port": 18080}}, CONTAINER, IP, session)).success
    refused = await run_probe({"tcpSocket": {"port": 18081}}, CONTAINER, IP, session)
    assert not refused.success
    missing = await run_probe({"httpGet": {"port": "nope"}}, CONTAINER, IP, session)
    assert not missing.success and "not found" in missing.message


async def test_uninterpretable_exec_fails_with_reason(session: aiohttp.ClientSession) -> None:
    outcome = await run_probe({"exec": {"command": ["cat", "/tmp/healthy"]}}, CONTAINER, IP, session)
    assert not outcome.success and "not interpretable" in outcome.message


async def test_a_probe_deadline_needs_its_time_on_the_clock_and_in_real_time() -> None:
    """On a FakeClock a slow answer alone never times a probe out (its next period would never
    come); once the test moves virtual time past the bound as well, it does."""
    clock = FakeClock()
    async with deadline(clock, 0.01):
        await asyncio.sleep(0.05)  # five times the bound in real time, none on the clock
    with pytest.raises(TimeoutError):
        async with deadline(clock, 0.01):
            await settle()  # the deadline's timer arms its sleep on the clock
            await clock.advance(1)
            await asyncio.sleep(0.05)
    assert clock.sleepers == 0  # no timer left armed
