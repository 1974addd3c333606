"""Manager lifecycle on virtual time, without an API server (no informers; a fake lease lock)."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable

import aiohttp
import anyio
import pytest
from prometheus_client import REGISTRY

from kuberay_py.client import ClientConfig
from kuberay_py.clock import FakeClock, settle
from kuberay_py.manager import LeaderElectionLost, Manager, ManagerOptions
from kuberay_py.workqueue import RateLimiter
from tests.polling import eventually

from .fakes import FakeLock, LeaseStore

CONFIG = ClientConfig(host="http://127.0.0.1:9")  # never contacted: nothing here lists or watches


def _options(**kw: object) -> ManagerOptions:
    base: dict[str, object] = {
        "metrics_bind_address": "127.0.0.1:0",
        "health_probe_bind_address": "127.0.0.1:0",
    }
    base.update(kw)
    return ManagerOptions(**base)  # type: ignore[arg-type]


def _with_fake_lease(mgr: Manager, store: LeaseStore, identity: str) -> None:
    assert mgr.elector is not None
    mgr.elector.lock = FakeLock(store, identity)


async def _status(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as s, s.get(url) as resp:
        return resp.status, await resp.text()


async def _until(cond: Callable[[], bool]) -> None:
    """Real I/O (HTTP to the fake lock's API) needs real loop time to progress: poll, bounded."""
    await eventually(cond, "the elector waiting for its next attempt", 10)


def _spawn(mgr: Manager, **kw: bool) -> asyncio.Task[None]:
    return asyncio.create_task(mgr.run(install_signal_handlers=kw.get("signals", False)))


async def test_runs_runnables_serves_probes_and_stops_cleanly() -> None:
    clock = FakeClock()
    mgr = Manager(CONFIG, _options(), clock=clock)
    started = asyncio.Event()
    stopped: list[str] = []

    async def worker() -> None:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            stopped.append("worker")

    mgr.add_runnable(worker, needs_leader_election=True)
    run = _spawn(mgr)
    await asyncio.wait_for(mgr.elected.wait(), 5)
    assert started.is_set()
    assert mgr.health_url is not None and mgr.metrics_url is not None
    assert await _status(mgr.health_url + "/healthz") == (200, "ok")
    assert await _status(mgr.health_url + "/readyz") == (200, "ok")
    status, body = await _status(mgr.metrics_url + "/metrics")
    assert status == 200 and "# TYPE" in body
    mgr.stop()
    await asyncio.wait_for(run, 5)  # returns normally: exit code 0
    assert stopped == ["worker"]
    assert mgr.health_url is not None
    with pytest.raises(aiohttp.ClientConnectionError):
        await _status(mgr.health_url + "/healthz")  # servers closed last


async def test_readyz_turns_unready_first_and_drain_is_bounded_by_the_timeout() -> None:
    clock = FakeClock()
    mgr = Manager(CONFIG, _options(graceful_shutdown_timeout=30.0), clock=clock)
    asked_to_stop = asyncio.Event()
    finished: list[str] = []

    async def reconciler_like() -> None:
        await asked_to_stop.wait()
        await clock.sleep(10)  # an in-flight reconcile that needs 10 s to finish
        finished.append("drained")

    mgr.add_runnable(reconciler_like, stop=asked_to_stop.set)
    run = _spawn(mgr)
    await asyncio.wait_for(mgr.elected.wait(), 5)
    assert mgr.health_url is not None
    mgr.stop()
    await settle()
    status, body = await _status(mgr.health_url + "/readyz")
    assert status == 500 and "[-]shutdown failed" in body
    assert await _status(mgr.health_url + "/healthz") == (200, "ok")  # alive, just not ready
    assert not run.done()
    await clock.advance(10)
    await asyncio.wait_for(run, 5)
    assert finished == ["drained"]


async def test_graceful_timeout_cancels_a_runnable_that_will_not_finish() -> None:
    clock = FakeClock()
    mgr = Manager(CONFIG, _options(graceful_shutdown_timeout=5.0), clock=clock)
    cancelled = asyncio.Event()

    async def stubborn() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    mgr.add_runnable(stubborn, needs_leader_election=False, stop=lambda: None)  # ignores the request
    run = _spawn(mgr)
    await asyncio.wait_for(mgr.elected.wait(), 5)
    mgr.stop()
    await settle()
    await clock.advance(4.9)
    assert not cancelled.is_set()
    await clock.advance(0.1)
    await asyncio.wait_for(run, 5)
    assert cancelled.is_set()


async def test_a_failing_runnable_stops_the_manager_and_is_reraised() -> None:
    mgr = Manager(CONFIG, _options(), clock=FakeClock())

    async def broken() -> None:
        raise RuntimeError("informer exploded")

    mgr.add_runnable(broken, needs_leader_election=False)
    with pytest.raises(RuntimeError, match="informer exploded"):
        await asyncio.wait_for(mgr.run(install_signal_handlers=False), 5)


async def test_sigterm_drains_and_returns_normally() -> None:
    mgr = Manager(CONFIG, _options(), clock=FakeClock())
    asked = asyncio.Event()

    async def worker() -> None:
        await asked.wait()

    mgr.add_runnable(worker, stop=asked.set)
    run = _spawn(mgr, signals=True)
    await asyncio.wait_for(mgr.elected.wait(), 5)
    os.kill(os.getpid(), signal.SIGTERM)
    await asyncio.wait_for(run, 5)
    assert asked.is_set()
    # Handlers were removed again: the loop no longer intercepts SIGTERM.
    assert signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None)


async def test_controllers_wait_for_the_lease_and_the_loser_stands_by() -> None:
    clock, store = FakeClock(), LeaseStore()
    opts = _options(leader_election=True, leader_election_namespace="ns", leader_election_id="unit-le")
    a, b = Manager(CONFIG, opts, clock=clock), Manager(CONFIG, opts, clock=clock)
    _with_fake_lease(a, store, "a")
    _with_fake_lease(b, store, "b")
    ran: list[str] = []

    def runnable(who: str) -> Callable[[], Awaitable[None]]:
        async def fn() -> None:
            ran.append(who)
            await anyio.sleep_forever()

        return fn

    a.add_runnable(runnable("a"))
    b.add_runnable(runnable("b"))
    run_a = _spawn(a)
    await asyncio.wait_for(a.elected.wait(), 5)
    run_b = _spawn(b)
    await _until(lambda: b.elector is not None and b.elector.next_attempt_at is not None)
    for _ in range(5):
        await clock.advance(4.4)
    assert ran == ["a"] and not b.elected.is_set()
    assert REGISTRY.get_sample_value("leader_election_master_status", {"name": "unit-le"}) is not None

    # A clean stop releases the lease after draining; b takes over at its next retry.
    a.stop()
    await asyncio.wait_for(run_a, 5)
    assert store.record is not None and store.record.holder_identity == ""
    await clock.advance(4.4)
    await asyncio.wait_for(b.elected.wait(), 5)
    assert ran == ["a", "b"]
    assert store.record.holder_identity == "b" and store.record.leader_transitions == 1
    b.stop()
    await asyncio.wait_for(run_b, 5)


async def test_losing_the_lease_cancels_at_once_and_raises() -> None:
    clock, store = FakeClock(), LeaseStore()
    opts = _options(
        leader_election=True,
        leader_election_namespace="ns",
        leader_election_id="unit-lost",
        graceful_shutdown_timeout=30.0,
    )
    mgr = Manager(CONFIG, opts, clock=clock)
    _with_fake_lease(mgr, store, "a")
    cancelled = asyncio.Event()

    async def controller_like() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    mgr.add_runnable(controller_like, stop=lambda: None)
    run = _spawn(mgr)
    await asyncio.wait_for(mgr.elected.wait(), 5)
    store.fail = ConnectionError("apiserver partitioned away")
    for _ in range(7):
        await clock.advance(2.0)
    with pytest.raises(LeaderElectionLost):
        await asyncio.wait_for(run, 5)
    assert cancelled.is_set()  # not drained for 30 s: someone else may lead already
    assert REGISTRY.get_sample_value("leader_election_master_status", {"name": "unit-lost"}) == 0


def test_leader_election_outside_a_cluster_needs_a_namespace() -> None:
    with pytest.raises(ValueError, match="leader election namespace"):
        Manager(CONFIG, _options(leader_election=True), clock=FakeClock())


def test_controller_names_must_be_unique() -> None:
    mgr = Manager(CONFIG, _options(), clock=FakeClock())
    mgr.controller("dup").watches(_pods(), lambda obj: []).complete(_NoopReconciler())
    with pytest.raises(ValueError, match="already used"):
        mgr.controller("dup")


def _retry_limiter_of(mgr: Manager, name: str) -> RateLimiter:
    controller = mgr.controller(name).watches(_pods(), lambda obj: []).complete(_NoopReconciler())
    return controller.queue.rate_limiter


def test_controllers_retry_under_the_managers_overall_limit() -> None:
    mgr = Manager(CONFIG, _options(reconcile_retry_qps=2.0, reconcile_retry_burst=3), clock=FakeClock())
    limiter = _retry_limiter_of(mgr, "limited")
    # Distinct failing keys: the per-item back-off alone would say 5 ms for each.
    assert [limiter.when(k) for k in range(5)] == [0.005, 0.005, 0.005, 0.5, 1.0]
    per_item = Manager(CONFIG, _options(reconcile_retry_qps=0), clock=FakeClock())
    limiter = _retry_limiter_of(per_item, "free")
    assert {limiter.when(k) for k in range(500)} == {0.005}
    with pytest.raises(ValueError, match="burst"):
        Manager(CONFIG, _options(reconcile_retry_burst=0), clock=FakeClock())


def _pods() -> object:
    from kuberay_py.client import resources

    return resources.PODS


class _NoopReconciler:
    async def reconcile(self, request: object) -> object:
        from kuberay_py.controller import Result

        return Result()


async def test_stop_while_waiting_for_the_lease_never_starts_controllers() -> None:
    clock, store = FakeClock(), LeaseStore()
    opts = _options(leader_election=True, leader_election_namespace="ns", leader_election_id="unit-wait")
    holder = Manager(CONFIG, opts, clock=clock)
    waiter = Manager(CONFIG, opts, clock=clock)
    _with_fake_lease(holder, store, "holder")
    _with_fake_lease(waiter, store, "waiter")
    ran: list[str] = []

    async def controller_like() -> None:
        ran.append("waiter")

    waiter.add_runnable(controller_like)
    run_holder = _spawn(holder)
    await asyncio.wait_for(holder.elected.wait(), 5)
    run_waiter = _spawn(waiter)
    await _until(lambda: waiter.elector is not None and waiter.elector.next_attempt_at is not None)
    waiter.stop()
    await asyncio.wait_for(run_waiter, 5)
    assert ran == [] and not waiter.elected.is_set()
    assert store.record is not None and store.record.holder_identity == "holder"  # untouched
    holder.stop()
    await asyncio.wait_for(run_holder, 5)


async def test_previous_signal_handlers_are_restored_after_run() -> None:
    seen: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        mgr = Manager(CONFIG, _options(), clock=FakeClock())
        run = _spawn(mgr, signals=True)
        await asyncio.wait_for(mgr.elected.wait(), 5)
        mgr.stop()
        await asyncio.wait_for(run, 5)
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.sleep(0)
        assert seen == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, previous)


async def test_a_stopped_manager_cannot_be_run_again() -> None:
    mgr = Manager(CONFIG, _options(), clock=FakeClock())
    run = _spawn(mgr)
    await asyncio.wait_for(mgr.elected.wait(), 5)
    mgr.stop()
    await asyncio.wait_for(run, 5)
    with pytest.raises(RuntimeError, match="cannot be restarted"):
        await mgr.run(install_signal_handlers=False)


async def test_losing_the_lease_during_a_graceful_drain_cuts_it_short() -> None:
    clock, store = FakeClock(), LeaseStore()
    opts = _options(
        leader_election=True,
        leader_election_namespace="ns",
        leader_election_id="unit-drain-lost",
        graceful_shutdown_timeout=60.0,
    )
    mgr = Manager(CONFIG, opts, clock=clock)
    _with_fake_lease(mgr, store, "a")
    cancelled = asyncio.Event()

    async def slow_reconcile() -> None:
        try:
            await anyio.sleep_forever()  # ignores its stop hook: a reconcile stuck on a slow call
        finally:
            cancelled.set()

    mgr.add_runnable(slow_reconcile, stop=lambda: None)
    run = _spawn(mgr)
    await asyncio.wait_for(mgr.elected.wait(), 5)
    mgr.stop()
    await settle()
    store.fail = ConnectionError("partitioned")
    for _ in range(7):
        await clock.advance(2.0)
    with pytest.raises(LeaderElectionLost):
        await asyncio.wait_for(run, 5)
    assert cancelled.is_set() and clock.now() < 1000.0 + 60.0  # well before the graceful timeout
    assert store.record is not None and store.record.holder_identity == "a"  # not "released"
