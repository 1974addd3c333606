import asyncio

import pytest
from aiohttp import web

from controllers.ray.health import HeadProxyHealthChecker, HeadTarget, HealthResult
from kuberay_py.clock import FakeClock
from kuberay_py.metrics import registry


def target(server_or_port, uid: str = "uid-1", owner: str = "ns/svc") -> HeadTarget:
    port = server_or_port if isinstance(server_or_port, int) else server_or_port.port
    return HeadTarget(
        namespace="ns", pod_name=f"head-{uid}", pod_uid=uid, ip="127.0.0.1", port=port, owner=owner
    )


def sample(name: str, **labels: str) -> float:
    """A metric's current value as a scrape of the operator's registry reports it."""
    return registry.get_sample_value(name, labels) or 0.0


def counter(result: str) -> float:
    return sample("kuberay_head_proxy_health_checks_total", result=result)


def coalesced() -> float:
    return sample("kuberay_head_proxy_health_check_coalesced_total")


def in_flight() -> float:
    return sample("kuberay_head_proxy_health_checks_in_flight")


@pytest.fixture
async def checker_factory():
    made: list[HeadProxyHealthChecker] = []

    def make(**kwargs) -> HeadProxyHealthChecker:
        kwargs.setdefault("clock", FakeClock())
        c = HeadProxyHealthChecker(**kwargs)
        made.append(c)
        return c

    yield make
    for c in made:
        await c.close()


async def respond(status: int, text: str = "success"):
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=status, text=text)

    return handler


@pytest.mark.parametrize(
    ("status", "healthy", "outcome"),
    [(200, True, "healthy"), (503, False, "unhealthy"), (201, False, "unhealthy"), (204, False, "unhealthy")],
)
async def test_healthy_means_http_200_exactly(http_server, checker_factory, status, healthy, outcome) -> None:
    server = await http_server(await respond(status, "This node is being drained." if status == 503 else ""))
    checker = checker_factory()
    before = counter(outcome)
    result = await checker.check(target(server))
    assert (result.healthy, result.outcome) == (healthy, outcome)
    assert server.requests[0].path == "/-/healthz"
    assert counter(outcome) == before + 1
    if status == 503:
        assert "being drained" in result.detail


async def test_timeout_and_refused_are_unhealthy(http_server, checker_factory, refused_port) -> None:
    hanging = await http_server(lambda r: hanging.hang(r))
    checker = checker_factory(timeout=0.2)
    t_before, e_before = counter("timeout"), counter("error")
    timed_out = await checker.check(target(hanging, uid="a"))
    refused = await checker.check(target(refused_port, uid="b"))
    assert (timed_out.healthy, timed_out.outcome) == (False, "timeout")
    assert timed_out.detail == "no answer within 0.2 s, twice"
    assert (refused.healthy, refused.outcome) == (False, "error")
    assert len(hanging.requests) == 2  # a timeout is checked once more before it counts
    assert counter("timeout") == t_before + 2
    assert counter("error") == e_before + 1  # an error is not repeated


async def test_a_head_that_misses_one_deadline_keeps_serving(http_server, checker_factory) -> None:
    """The first answer comes too late (as when the operator's own loop was held past the
    deadline, e.g. CPU-throttled at 100m during a big scale-up); the second check gets it."""

    async def late_once(request: web.Request) -> web.StreamResponse:
        if len(server.requests) == 1:  # the server records each request before it is handled
            return await server.hang(request)
        return web.Response(text="success")

    server = await http_server(late_once)
    checker = checker_factory(timeout=0.2)
    t_before, h_before = counter("timeout"), counter("healthy")
    result = await checker.check(target(server))
    assert (result.healthy, result.outcome, result.detail) == (True, "healthy", "success")
    assert len(server.requests) == 2
    assert (counter("timeout"), counter("healthy")) == (t_before + 1, h_before + 1)


async def test_body_read_is_capped_and_big_body_still_healthy(http_server, checker_factory) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        await resp.write(b"success" + b"x" * 100_000)
        await resp.write_eof()
        return resp

    server = await http_server(handler)
    checker = checker_factory(max_body_bytes=4096)
    result = await checker.check(target(server))
    assert result.healthy
    assert result.detail.startswith("success")


async def test_concurrent_checks_of_a_head_share_a_request(http_server, checker_factory, wait_until) -> None:
    server = await http_server(lambda r: server.hang(r))
    checker = checker_factory()
    before = coalesced()
    calls = [asyncio.create_task(checker.check(target(server))) for _ in range(5)]
    await wait_until(lambda: bool(server.requests))
    server.release.set()
    results = await asyncio.gather(*calls)
    assert len(server.requests) == 1
    assert all(r is results[0] for r in results)
    assert coalesced() == before + 4


async def test_in_flight_checks_are_bounded(http_server, checker_factory, wait_until) -> None:
    server = await http_server(lambda r: server.hang(r))
    checker = checker_factory(max_concurrency=2)
    calls = [asyncio.create_task(checker.check(target(server, uid=f"u{i}"))) for i in range(5)]
    await wait_until(lambda: len(server.requests) >= 2)
    for _ in range(20):  # give any over-limit check every chance to start
        await asyncio.sleep(0.001)
    assert len(server.requests) == 2
    assert in_flight() == 2
    server.release.set()
    results = await asyncio.gather(*calls)
    assert all(r.healthy for r in results)
    assert len(server.requests) == 5
    assert server.max_active == 2
    assert in_flight() == 0


async def test_results_are_cached_for_the_check_period(http_server, checker_factory) -> None:
    server = await http_server(await respond(200))
    clock = FakeClock()
    checker = checker_factory(clock=clock, period=5.0)
    t = target(server)
    await checker.check(t)
    await clock.advance(4.9)
    await checker.check(t)
    assert len(server.requests) == 1
    await clock.advance(0.1)
    await checker.check(t)
    assert len(server.requests) == 2


async def test_on_change_fires_on_first_result_and_on_changes_only(http_server, checker_factory) -> None:
    status = {"code": 200}

    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=status["code"], text="success")

    server = await http_server(handler)
    clock = FakeClock()
    changes: list[tuple[str, bool]] = []
    checker = checker_factory(
        clock=clock, period=1.0, on_change=lambda t, r: changes.append((t.owner, r.healthy))
    )
    t = target(server, owner="ns/my-svc")
    for code in (200, 200, 503, 503, 200):
        status["code"] = code
        await checker.check(t)
        await clock.advance(1.0)
    assert changes == [("ns/my-svc", True), ("ns/my-svc", False), ("ns/my-svc", True)]
    assert len(server.requests) == 5


async def test_request_checks_in_background_and_reports_on_change(http_server, checker_factory) -> None:
    server = await http_server(await respond(200))
    seen: list[HealthResult] = []
    checker = checker_factory(on_change=lambda t, r: seen.append(r))
    t = target(server)
    assert checker.latest(t.pod_uid) is None
    checker.request(t)
    checker.request(t)  # already under way: no second probe
    await checker.wait_idle()
    assert len(server.requests) == 1
    assert [r.healthy for r in seen] == [True]
    assert checker.latest(t.pod_uid) is seen[0]
    checker.request(t)  # fresh result: nothing to do
    await checker.wait_idle()
    assert len(server.requests) == 1


async def test_run_checks_only_the_targets_once_per_period(http_server, checker_factory, wait_until) -> None:
    head_a = await http_server(await respond(200))
    head_b = await http_server(await respond(503))
    clock = FakeClock()
    targets = [target(head_a, uid="a", owner="ns/a"), target(head_b, uid="b", owner="ns/b")]
    changes: list[tuple[str, bool]] = []
    checker = checker_factory(
        clock=clock,
        period=5.0,
        targets=lambda: list(targets),
        on_change=lambda t, r: changes.append((t.owner, r.healthy)),
    )
    runner = asyncio.create_task(checker.run())
    try:
        await wait_until(lambda: checker.rounds >= 1)
        await checker.wait_idle()
        assert sorted(changes) == [("ns/a", True), ("ns/b", False)]
        assert (len(head_a.requests), len(head_b.requests)) == (1, 1)

        await clock.advance(4.0)
        await checker.wait_idle()
        assert (len(head_a.requests), len(head_b.requests)) == (1, 1)  # not before the period ends

        targets.pop()  # head b's RayService went away: b is no longer probed
        await clock.advance(1.0)
        await wait_until(lambda: checker.rounds >= 2)
        await checker.wait_idle()
        assert (len(head_a.requests), len(head_b.requests)) == (2, 1)
        assert sample("kuberay_head_proxy_health_check_targets") == 1
        assert sorted(changes) == [("ns/a", True), ("ns/b", False)]  # no change, no callback
    finally:
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)


async def test_a_hanging_head_does_not_delay_results_of_other_heads(http_server, checker_factory) -> None:
    hanging = await http_server(lambda r: hanging.hang(r))
    ok = await http_server(await respond(200))
    checker = checker_factory(max_concurrency=2, timeout=30.0)
    checker.request(target(hanging, uid="hang"))
    result = await checker.check(target(ok, uid="ok"))
    assert result.healthy
    assert checker.latest("hang") is None  # still under way, nobody waited for it


async def test_close_cancels_checks_and_releases_joiners(http_server, wait_until) -> None:
    server = await http_server(lambda r: server.hang(r))
    checker = HeadProxyHealthChecker(clock=FakeClock())
    joiner = asyncio.create_task(checker.check(target(server)))
    await wait_until(lambda: bool(server.requests))
    await checker.close()
    with pytest.raises(asyncio.CancelledError):
        await joiner


def test_rejects_bad_settings() -> None:
    with pytest.raises(ValueError, match="max_concurrency"):
        HeadProxyHealthChecker(max_concurrency=0)
    with pytest.raises(ValueError, match="period"):
        HeadProxyHealthChecker(period=0)


async def test_a_failing_targets_callable_skips_the_round(http_server, checker_factory, wait_until) -> None:
    server = await http_server(await respond(200))
    clock = FakeClock()
    calls = {"n": 0}

    def targets() -> list[HeadTarget]:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("cache not synced")
        return [target(server)]

    checker = checker_factory(clock=clock, period=1.0, targets=targets)
    runner = asyncio.create_task(checker.run())
    try:
        await wait_until(lambda: checker.rounds >= 1)
        assert server.requests == []
        await clock.advance(1.0)
        await wait_until(lambda: checker.rounds >= 2)
        await checker.wait_idle()
        assert len(server.requests) == 1
    finally:
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)


def healthy_series() -> dict[tuple[str, ...], float]:
    return {
        (s.labels["namespace"], s.labels["pod"], s.labels["rayservice"]): s.value
        for family in registry.collect()
        if family.name == "kuberay_head_proxy_healthy"
        for s in family.samples
        if s.labels["namespace"] == "gauge-ns"
    }


async def test_per_head_healthy_gauge_follows_results_and_leaves_with_the_head(
    http_server, checker_factory, wait_until
) -> None:
    up = await http_server(await respond(200))
    down = await http_server(await respond(503))
    clock = FakeClock()

    def gauge_target(server, uid: str, owner: str) -> HeadTarget:
        return HeadTarget(
            namespace="gauge-ns",
            pod_name=f"head-{uid}",
            pod_uid=uid,
            ip="127.0.0.1",
            port=server.port,
            owner=owner,
        )

    targets = [gauge_target(up, "g1", "gauge-ns/svc-a"), gauge_target(down, "g2", "gauge-ns/svc-b")]
    checker = checker_factory(clock=clock, period=5.0, targets=lambda: list(targets))
    runner = asyncio.create_task(checker.run())
    try:
        await wait_until(lambda: checker.rounds >= 1)
        await checker.wait_idle()
        assert healthy_series() == {
            ("gauge-ns", "head-g1", "svc-a"): 1.0,
            ("gauge-ns", "head-g2", "svc-b"): 0.0,
        }
        targets.pop()  # head g2 is gone: after two periods without it, its series goes too
        for rounds in (2, 3, 4):
            await clock.advance(5.0)
            await wait_until(lambda r=rounds: checker.rounds >= r)
            await checker.wait_idle()
        assert healthy_series() == {("gauge-ns", "head-g1", "svc-a"): 1.0}
    finally:
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
