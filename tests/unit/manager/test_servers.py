"""Health probe handler semantics (controller-runtime's pkg/healthz) and the HTTP servers."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web
from prometheus_client import Counter

from kuberay_py.httpserver import HTTPServer, parse_bind_address
from kuberay_py.manager.healthz import HealthChecks
from kuberay_py.manager.servers import metrics_app
from kuberay_py.metrics import registry


class Flag:
    def __init__(self, healthy: bool = True) -> None:
        self.healthy = healthy

    def __call__(self) -> None:
        if not self.healthy:
            raise RuntimeError("secret detail")


@pytest.fixture
async def probe() -> AsyncIterator[tuple[HealthChecks, str, aiohttp.ClientSession]]:
    checks = HealthChecks("/readyz")
    app = web.Application()
    checks.install(app)
    server = HTTPServer("health", app, "127.0.0.1:0")
    await server.start()
    assert server.url is not None
    async with aiohttp.ClientSession() as session:
        yield checks, server.url, session
    await server.stop()


async def _get(session: aiohttp.ClientSession, url: str) -> tuple[int, str]:
    async with session.get(url) as resp:
        return resp.status, await resp.text()


async def test_no_checks_reports_the_builtin_ping(
    probe: tuple[HealthChecks, str, aiohttp.ClientSession],
) -> None:
    _, url, s = probe
    assert await _get(s, url + "/readyz") == (200, "ok")
    assert await _get(s, url + "/readyz?verbose") == (200, "[+]ping ok\nhealthz check passed\n")


async def test_failing_check_gives_500_with_the_reason_withheld(
    probe: tuple[HealthChecks, str, aiohttp.ClientSession],
) -> None:
    checks, url, s = probe
    sync = Flag(False)
    checks.add("informer-sync", sync)
    checks.add("ping", Flag())
    status, body = await _get(s, url + "/readyz")
    assert status == 500
    assert body == "[-]informer-sync failed: reason withheld\n[+]ping ok\nhealthz check failed\n"
    assert "secret detail" not in body
    sync.healthy = True
    assert await _get(s, url + "/readyz") == (200, "ok")


async def test_exclude_and_single_check_paths(probe: tuple[HealthChecks, str, aiohttp.ClientSession]) -> None:
    checks, url, s = probe
    checks.add("bad", Flag(False))
    checks.add("good", Flag())
    status, body = await _get(s, url + "/readyz?exclude=bad&exclude=nope")
    assert status == 200 and body == "ok"
    status, body = await _get(s, url + "/readyz?exclude=bad&exclude=nope&verbose")
    assert body == (
        "[+]bad excluded: ok\n[+]good ok\n"
        'warn: some health checks cannot be excluded: no matches for "nope"\n'
        "healthz check passed\n"
    )
    assert await _get(s, url + "/readyz/good") == (200, "ok")
    assert await _get(s, url + "/readyz/bad") == (500, "internal server error: secret detail\n")
    assert (await _get(s, url + "/readyz/missing"))[0] == 404


async def test_async_checks_are_awaited(probe: tuple[HealthChecks, str, aiohttp.ClientSession]) -> None:
    checks, url, s = probe

    async def lease_held() -> None:
        raise RuntimeError("no lease")

    checks.add("lease", lease_held)
    assert (await _get(s, url + "/readyz"))[0] == 500


def test_duplicate_or_bad_check_names_are_rejected() -> None:
    checks = HealthChecks("/healthz")
    checks.add("a", Flag())
    with pytest.raises(ValueError, match="already"):
        checks.add("a", Flag())
    with pytest.raises(ValueError, match="invalid"):
        checks.add("a/b", Flag())


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        (":8080", ("", 8080)),
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        ("[::1]:9", ("::1", 9)),
        ("0", None),
        ("", None),
    ],
)
def test_bind_addresses(address: str, expected: tuple[str, int] | None) -> None:
    assert parse_bind_address(address) == expected


@pytest.mark.parametrize("address", ["8080", "host:http", ":70000"])
def test_bad_bind_addresses_are_clear_errors(address: str) -> None:
    with pytest.raises(ValueError, match="bind address"):
        parse_bind_address(address)


async def test_disabled_server_has_no_url() -> None:
    server = HTTPServer("metrics", metrics_app(), "0")
    await server.start()
    assert server.url is None
    await server.stop()


async def test_port_in_use_is_a_clear_error() -> None:
    first = HTTPServer("metrics", metrics_app(), "127.0.0.1:0")
    await first.start()
    assert first.url is not None
    port = first.url.rsplit(":", 1)[1]
    second = HTTPServer("health", metrics_app(), f"127.0.0.1:{port}")
    try:
        with pytest.raises(OSError, match="health server cannot listen"):
            await second.start()
    finally:
        await first.stop()


async def test_metrics_endpoint_serves_the_shared_registry_without_created_series() -> None:
    c = Counter("test_manager_servers_total", "test counter", registry=registry)
    c.inc(3)
    server = HTTPServer("metrics", metrics_app(), "127.0.0.1:0")
    await server.start()
    try:
        async with aiohttp.ClientSession() as s, s.get(f"{server.url}/metrics") as resp:
            assert resp.status == 200
            assert resp.headers["Content-Type"].startswith("text/plain; version=")
            body = await resp.text()
    finally:
        await server.stop()
        registry.unregister(c)
    assert "test_manager_servers_total 3.0" in body
    assert "test_manager_servers_created" not in body
