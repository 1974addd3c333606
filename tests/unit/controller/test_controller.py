"""The worker loop: Result contract, concurrency, metrics, logging context, start/stop."""

from __future__ import annotations

import asyncio
import io
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import pytest
import structlog

from kuberay_py.client.resources import Resource
from kuberay_py.clock import FakeClock, settle
from kuberay_py.controller import Builder, Controller, Request, Result, TerminalError
from kuberay_py.log import configure
from kuberay_py.metrics import registry

RAYCLUSTERS = Resource("ray.io", "v1", "RayCluster", "rayclusters")
_n = itertools.count()
REQ = Request("ns", "rc")


class FnReconciler:
    def __init__(self, fn: Callable[[Request], Awaitable[Result]]) -> None:
        self.fn = fn
        self.calls: list[Request] = []

    async def reconcile(self, request: Request) -> Result:
        self.calls.append(request)
        return await self.fn(request)


def metric(name: str, controller: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, {"controller": controller, **labels})


async def start(
    cache: Any, fn: Callable[[Request], Awaitable[Result]], *, workers: int = 1
) -> tuple[Controller, FnReconciler, FakeClock, asyncio.Task[None]]:
    clock = FakeClock()
    rec = FnReconciler(fn)
    c = (
        Builder(f"ctl-{next(_n)}", cache, clock=clock)
        .for_(RAYCLUSTERS)
        .with_options(max_concurrent_reconciles=workers)
        .complete(rec)
    )
    task = asyncio.create_task(c.run())
    await settle()
    return c, rec, clock, task


async def stop(c: Controller, task: asyncio.Task[None]) -> None:
    c.stop()
    await asyncio.wait_for(task, 5)


async def ok(_: Request) -> Result:
    return Result()


async def test_success_forgets_and_counts(cache: Any) -> None:
    c, rec, _, task = await start(cache, ok)
    c.queue.add_rate_limited(REQ)  # simulate earlier failures
    c.queue.rate_limiter.when(REQ)
    c.enqueue(REQ)
    await settle()
    assert rec.calls == [REQ]
    assert c.queue.num_requeues(REQ) == 0
    assert metric("controller_runtime_reconcile_total", c.name, result="success") == 1
    assert metric("controller_runtime_reconcile_total", c.name, result="error") == 0
    await stop(c, task)


async def test_exception_is_logged_with_traceback_counted_and_requeued_with_back_off(cache: Any) -> None:
    fails = [True, True, False]

    async def flaky(_: Request) -> Result:
        if fails.pop(0):
            raise RuntimeError("apiserver said no")
        return Result(requeue_after=99)  # only honoured once it stops raising

    c, rec, clock, task = await start(cache, flaky)
    with structlog.testing.capture_logs() as logs:
        c.enqueue(REQ)
        await settle()
    assert len(rec.calls) == 1
    assert metric("controller_runtime_reconcile_errors_total", c.name) == 1
    [err] = [e for e in logs if e["event"] == "Reconciler error"]
    assert err["exc_info"] is True and err["log_level"] == "error"
    assert err["error"] == "RuntimeError: apiserver said no" and err["requeues"] == 1
    await clock.advance(0.004)
    assert len(rec.calls) == 1
    await clock.advance(0.001)  # first back-off: 5 ms
    assert len(rec.calls) == 2
    await clock.advance(0.009)
    assert len(rec.calls) == 2
    await clock.advance(0.001)  # second back-off: 10 ms
    assert len(rec.calls) == 3
    assert metric("controller_runtime_reconcile_total", c.name, result="error") == 2
    assert metric("controller_runtime_reconcile_total", c.name, result="requeue_after") == 1
    assert c.queue.num_requeues(REQ) == 0  # forgotten on the successful requeue_after
    await stop(c, task)


async def test_worker_survives_any_number_of_exceptions(cache: Any) -> None:
    async def boom(req: Request) -> Result:
        raise ValueError(req.name)

    c, rec, _, task = await start(cache, boom)
    for i in range(5):
        c.enqueue(Request("ns", f"rc-{i}"))
    await settle(50)
    assert len(rec.calls) == 5
    assert not task.done()
    await stop(c, task)


async def test_requeue_after_brings_the_key_back_after_exactly_that_delay(cache: Any) -> None:
    async def later(_: Request) -> Result:
        return Result(requeue_after=300)

    c, rec, clock, task = await start(cache, later)
    c.enqueue(REQ)
    await settle()
    await clock.advance(299.9)
    assert len(rec.calls) == 1
    await clock.advance(0.1)
    assert len(rec.calls) == 2
    await stop(c, task)


async def test_requeue_true_is_rate_limited(cache: Any) -> None:
    async def again(_: Request) -> Result:
        return Result(requeue=True)

    c, rec, clock, task = await start(cache, again)
    c.enqueue(REQ)
    await settle()
    await clock.advance(0.005)
    assert len(rec.calls) == 2
    assert c.queue.num_requeues(REQ) == 2
    assert metric("controller_runtime_reconcile_total", c.name, result="requeue") == 2
    await stop(c, task)


async def test_terminal_error_is_counted_but_not_requeued(cache: Any) -> None:
    async def hopeless(_: Request) -> Result:
        raise TerminalError("spec.headGroupSpec is missing")

    c, rec, clock, task = await start(cache, hopeless)
    c.enqueue(REQ)
    await settle()
    await clock.advance(2000)
    assert len(rec.calls) == 1
    assert metric("controller_runtime_terminal_reconcile_errors_total", c.name) == 1
    assert metric("controller_runtime_reconcile_errors_total", c.name) == 1
    await stop(c, task)


async def test_returning_something_other_than_a_result_is_an_error(cache: Any) -> None:
    async def forgot_return(_: Request) -> Result:
        return None  # type: ignore[return-value]

    c, _, _, task = await start(cache, forgot_return)
    with structlog.testing.capture_logs() as logs:
        c.enqueue(REQ)
        await settle()
    assert metric("controller_runtime_reconcile_errors_total", c.name) == 1
    assert c.queue.waiting == 1  # requeued rate-limited, nothing lost
    assert any(e["event"] == "Reconciler error" for e in logs)
    await stop(c, task)


async def test_same_key_never_runs_twice_at_once_but_other_keys_run_in_parallel(cache: Any) -> None:
    running: dict[Request, int] = {}
    peak: dict[Request, int] = {}
    gate = asyncio.Event()

    async def slow(req: Request) -> Result:
        running[req] = running.get(req, 0) + 1
        peak[req] = max(peak.get(req, 0), running[req])
        await gate.wait()
        running[req] -= 1
        return Result()

    c, rec, _, task = await start(cache, slow, workers=4)
    a, b = Request("ns", "a"), Request("ns", "b")
    c.enqueue(a)
    c.enqueue(b)
    await settle()
    c.enqueue(a)  # re-added while a is processing
    c.enqueue(a)
    await settle()
    assert sum(running.values()) == 2  # a and b in parallel; the second a waits
    assert metric("controller_runtime_active_workers", c.name) == 2
    assert metric("controller_runtime_max_concurrent_reconciles", c.name) == 4
    gate.set()
    await settle(30)
    assert rec.calls.count(a) == 2 and rec.calls.count(b) == 1
    assert peak == {a: 1, b: 1}
    assert metric("controller_runtime_active_workers", c.name) == 0
    await stop(c, task)


async def test_each_reconcile_binds_controller_namespace_name_and_fresh_reconcile_id(cache: Any) -> None:
    seen: list[dict[str, Any]] = []

    async def record(_: Request) -> Result:
        seen.append(structlog.contextvars.get_contextvars())
        return Result()

    c, _, _, task = await start(cache, record)
    c.enqueue(REQ)
    await settle()
    c.enqueue(REQ)
    await settle()
    assert [(s["controller"], s["namespace"], s["name"]) for s in seen] == [(c.name, "ns", "rc")] * 2
    assert seen[0]["reconcile_id"] != seen[1]["reconcile_id"]
    assert "reconcile_id" not in structlog.contextvars.get_contextvars()
    await stop(c, task)


async def test_reconcile_time_is_observed_on_the_injected_clock(cache: Any) -> None:
    release = asyncio.Event()

    async def takes_time(_: Request) -> Result:
        await release.wait()
        return Result()

    c, _, clock, task = await start(cache, takes_time)
    c.enqueue(REQ)
    await settle()
    await clock.advance(0.3)
    release.set()
    await settle()
    assert metric("controller_runtime_reconcile_time_seconds_sum", c.name) == pytest.approx(0.3)
    assert metric("controller_runtime_reconcile_time_seconds_bucket", c.name, le="0.3") == 1
    assert metric("controller_runtime_reconcile_time_seconds_bucket", c.name, le="0.25") == 0
    await stop(c, task)


async def test_enqueue_after_delays_an_outside_trigger(cache: Any) -> None:
    c, rec, clock, task = await start(cache, ok)
    c.enqueue(REQ, after=10)
    await settle()
    assert rec.calls == []
    await clock.advance(10)
    assert rec.calls == [REQ]
    with pytest.raises(TypeError, match="Request"):
        c.enqueue("ns/rc")  # type: ignore[arg-type]
    await stop(c, task)


async def test_workers_start_only_after_caches_sync(unsynced_cache: Any) -> None:
    rec = FnReconciler(ok)
    c = Builder("ctl-sync", unsynced_cache, clock=FakeClock()).for_(RAYCLUSTERS).complete(rec)
    inf = unsynced_cache.informer_for(RAYCLUSTERS)
    inf.add({"metadata": {"name": "rc", "namespace": "ns"}}, is_initial=True)
    task = asyncio.create_task(c.run())
    await settle()
    assert rec.calls == []  # the event is queued, but no worker runs before sync
    inf.mark_synced()
    await settle()
    assert rec.calls == [REQ]
    await stop(c, task)


async def test_cache_sync_timeout_fails_run_clearly(unsynced_cache: Any) -> None:
    clock = FakeClock()
    c = (
        Builder("ctl-sync-timeout", unsynced_cache, clock=clock)
        .for_(RAYCLUSTERS)
        .with_options(cache_sync_timeout=120)
        .complete(FnReconciler(ok))
    )
    task = asyncio.create_task(c.run())
    await settle()
    await clock.advance(120)
    with pytest.raises(TimeoutError, match="waiting for caches to sync: for RayCluster"):
        await task
    assert c.queue.shutting_down


async def test_stop_lets_in_flight_reconciles_finish_and_drops_queued_keys(cache: Any) -> None:
    release = asyncio.Event()
    finished: list[Request] = []

    async def slow(req: Request) -> Result:
        await release.wait()
        finished.append(req)
        return Result()

    c, rec, _, task = await start(cache, slow)
    c.enqueue(Request("ns", "a"))
    await settle()
    c.enqueue(Request("ns", "b"))
    c.stop()
    await settle()
    assert not task.done()  # a is still reconciling
    release.set()
    await asyncio.wait_for(task, 5)
    assert finished == [Request("ns", "a")]
    assert rec.calls == [Request("ns", "a")]


async def test_run_twice_is_an_error(cache: Any) -> None:
    c, _, _, task = await start(cache, ok)
    with pytest.raises(RuntimeError, match="already started"):
        await c.run()
    await stop(c, task)


def test_controller_is_constructible_without_a_manager() -> None:
    c = Controller("standalone", FnReconciler(ok), max_concurrent_reconciles=3)
    assert c.queue.name == "standalone"
    assert metric("controller_runtime_max_concurrent_reconciles", "standalone") == 3
    for result in ("success", "error", "requeue", "requeue_after"):
        assert metric("controller_runtime_reconcile_total", "standalone", result=result) == 0


async def test_at_most_max_concurrent_reconciles_run_at_once(cache: Any) -> None:
    gate = asyncio.Event()
    running: list[Request] = []

    async def slow(req: Request) -> Result:
        running.append(req)
        await gate.wait()
        return Result()

    c, rec, _, task = await start(cache, slow, workers=2)
    for name in ("a", "b", "c"):
        c.enqueue(Request("ns", name))
    await settle()
    assert [r.name for r in running] == ["a", "b"]
    assert metric("controller_runtime_active_workers", c.name) == 2
    gate.set()
    await settle(30)
    assert [r.name for r in rec.calls] == ["a", "b", "c"]
    await stop(c, task)


async def test_reconciler_error_is_one_json_line_with_context_and_traceback(cache: Any) -> None:
    buf = io.StringIO()
    configure(fmt="json", level="info", stream=buf)
    try:

        async def boom(_: Request) -> Result:
            raise KeyError("spec")

        c, _, _, task = await start(cache, boom)
        c.enqueue(REQ)
        await settle()
        await stop(c, task)
    finally:
        structlog.reset_defaults()
        root = logging.getLogger()
        for h in list(root.handlers):
            if getattr(h, "_kuberay_py", False):
                root.removeHandler(h)
    lines = [orjson.loads(ln) for ln in buf.getvalue().splitlines() if ln.startswith("{")]
    [err] = [ln for ln in lines if ln["event"] == "Reconciler error"]
    assert (err["controller"], err["namespace"], err["name"]) == (c.name, "ns", "rc")
    assert len(err["reconcile_id"]) == 36
    assert "Traceback" in err["exception"] and "KeyError: 'spec'" in err["exception"]
