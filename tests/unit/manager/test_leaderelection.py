"""client-go's leader-election rules, each pinned on virtual time with an in-memory lease."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable

import pytest
from prometheus_client import REGISTRY

from kuberay_py.clock import FakeClock, settle
from kuberay_py.manager.leaderelection import LeaderElectionRecord, LeaderElector

from .fakes import FakeLock, LeaseStore


class FixedRandom(random.Random):
    def __init__(self, value: float) -> None:
        super().__init__()
        self.value = value

    def random(self) -> float:
        return self.value


def _elector(
    store: LeaseStore,
    identity: str,
    clock: FakeClock,
    *,
    jitter: float = 0.0,
    name: str = "test-lease",
    **kw: float,
) -> LeaderElector:
    return LeaderElector(FakeLock(store, identity), name=name, clock=clock, rng=FixedRandom(jitter), **kw)


def _gauge(name: str) -> float | None:
    return REGISTRY.get_sample_value("leader_election_master_status", {"name": name})


@pytest.fixture
async def tasks() -> AsyncIterator[list[asyncio.Task[None]]]:
    started: list[asyncio.Task[None]] = []
    yield started
    for t in started:
        t.cancel()
    await asyncio.gather(*started, return_exceptions=True)


def _spawn(tasks: list[asyncio.Task[None]], aw: Awaitable[None]) -> asyncio.Task[None]:
    async def run() -> None:
        await aw

    t = asyncio.create_task(run())
    tasks.append(t)
    return t


@pytest.mark.parametrize(
    ("lease", "renew", "retry", "match"),
    [(10, 10, 2, "lease_duration"), (15, 2.4, 2, "renew_deadline"), (15, 10, 0, "retry_period")],
)
def test_invalid_timings_are_rejected_like_client_go(
    lease: float, renew: float, retry: float, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        _elector(
            LeaseStore(), "a", FakeClock(), lease_duration=lease, renew_deadline=renew, retry_period=retry
        )


def test_empty_identity_is_rejected() -> None:
    with pytest.raises(ValueError, match="identity"):
        _elector(LeaseStore(), "", FakeClock())


async def test_first_candidate_creates_the_lease_and_leads() -> None:
    clock, store = FakeClock(), LeaseStore()
    a = _elector(store, "a", clock, name="first")
    assert _gauge("first") == 0
    await a.acquire()
    assert a.is_leader()
    assert store.record is not None
    assert store.record.holder_identity == "a"
    assert store.record.lease_duration_seconds == 15
    assert store.record.leader_transitions == 0
    assert store.record.acquire_time == clock.utcnow()
    assert _gauge("first") == 1


async def test_leader_renews_every_retry_period_keeping_acquire_time(tasks: list[asyncio.Task[None]]) -> None:
    clock, store = FakeClock(), LeaseStore()
    a = _elector(store, "a", clock)
    await a.acquire()
    acquired = store.record
    assert acquired is not None
    _spawn(tasks, a.hold())
    await settle()
    await clock.advance(2.0)
    await clock.advance(2.0)
    renewals = [r for who, r in store.writes if who == "a"][1:]
    assert len(renewals) >= 2
    assert all(r.acquire_time == acquired.acquire_time for r in renewals)
    assert renewals[-1].renew_time == clock.utcnow()
    assert all(r.leader_transitions == 0 for r in renewals)


async def test_renew_listeners_hear_each_renewal_with_the_written_record(
    tasks: list[asyncio.Task[None]],
) -> None:
    clock, store = FakeClock(), LeaseStore()
    a = _elector(store, "a", clock)
    heard: list[LeaderElectionRecord] = []
    remove = a.add_renew_listener(heard.append)

    def broken(record: LeaderElectionRecord) -> None:
        raise RuntimeError("a listener's bug")

    a.add_renew_listener(broken)
    await a.acquire()
    assert heard == []  # acquiring is not renewing
    _spawn(tasks, a.hold())
    await settle()
    await clock.advance(2.0)
    await clock.advance(2.0)
    renewals = [r for who, r in store.writes if who == "a"][1:]
    assert len(renewals) == 3  # at once, then after each retry period
    assert heard == renewals
    remove()
    await clock.advance(2.0)
    assert len(heard) == 3 and len(store.writes) == 5
    assert a.is_leader()  # the broken listener cost nothing


async def test_candidate_waits_for_the_lease_to_expire_by_its_own_observation(
    tasks: list[asyncio.Task[None]],
) -> None:
    clock, store = FakeClock(), LeaseStore()
    a = _elector(store, "a", clock)
    b = _elector(store, "b", clock)
    await a.acquire()
    hold_a = _spawn(tasks, a.hold())
    acquire_b = _spawn(tasks, b.acquire())
    await settle()
    for _ in range(10):  # the leader keeps renewing: b never gets it
        await clock.advance(2.0)
    assert not acquire_b.done() and b.leader() == "a"

    hold_a.cancel()  # the leader dies without releasing
    await settle()
    seen_last_change = b.observed_time  # b's last observation of a change to the record
    await clock.advance(seen_last_change + 15.0 - clock.now() - 0.01)
    assert not acquire_b.done(), "took the lease before leaseDuration passed since it last changed"
    while not acquire_b.done():
        await clock.advance(2.0)
    assert b.is_leader()
    assert clock.now() <= seen_last_change + 15.0 + 2.0  # lease duration + one retry
    assert store.record is not None and store.record.leader_transitions == 1
    assert store.record.holder_identity == "b"


async def test_remote_timestamps_are_never_compared_with_the_local_clock() -> None:
    """A lease whose renewTime looks ancient (clock skew) is still valid for leaseDuration after we saw it."""
    clock, store = FakeClock(), LeaseStore()
    a = _elector(store, "a", clock)
    await a.acquire()
    await clock.advance(3600)  # a's renewTime is now an hour "old" on our wall clock
    b = _elector(store, "b", clock)
    assert not await b.try_acquire_or_renew()
    await clock.advance(14.0)
    assert not await b.try_acquire_or_renew()
    await clock.advance(1.0)
    assert await b.try_acquire_or_renew()


async def test_acquire_retries_with_jitter_factor_1_2(tasks: list[asyncio.Task[None]]) -> None:
    clock, store = FakeClock(), LeaseStore()
    await _elector(store, "a", clock).acquire()
    b = _elector(store, "b", clock, jitter=0.5)
    _spawn(tasks, b.acquire())
    await settle()
    assert b.next_attempt_at == pytest.approx(clock.now() + 2.0 * (1 + 1.2 * 0.5))
    b2 = _elector(store, "b2", clock, jitter=0.999)
    _spawn(tasks, b2.acquire())
    await settle()
    assert b2.next_attempt_at is not None and b2.next_attempt_at < clock.now() + 2.0 * 2.2


async def test_leadership_is_lost_when_no_renewal_succeeds_within_renew_deadline(
    tasks: list[asyncio.Task[None]],
) -> None:
    clock, store = FakeClock(), LeaseStore()
    a = _elector(store, "a", clock, name="losing")
    await a.acquire()
    hold = _spawn(tasks, a.hold())
    await settle()
    await clock.advance(2.0)  # one good renewal
    store.fail = ConnectionError("apiserver unreachable")
    failing_since = clock.now()
    await clock.advance(2.0)
    while clock.now() - failing_since < 10.0:
        assert not hold.done()
        await clock.advance(1.0)
    await clock.advance(2.0)  # the next poll round (starting one retry later) exhausts its deadline
    assert hold.done() and hold.exception() is None
    assert _gauge("losing") == 0
    # It gave up before any other candidate could consider the lease expired.
    assert clock.now() < a.observed_time + 15.0 + 2.0


async def test_a_transient_renew_failure_within_the_deadline_keeps_leadership(
    tasks: list[asyncio.Task[None]],
) -> None:
    clock, store = FakeClock(), LeaseStore()
    a = _elector(store, "a", clock)
    await a.acquire()
    hold = _spawn(tasks, a.hold())
    await settle()
    store.fail = ConnectionError("blip")
    await clock.advance(2.0)
    await clock.advance(2.0)
    store.fail = None
    await clock.advance(2.0)
    assert not hold.done() and a.is_leader()
    assert store.record is not None and store.record.renew_time == clock.utcnow()


async def test_hung_api_call_is_cut_at_the_call_timeout_on_the_injected_clock(
    tasks: list[asyncio.Task[None]],
) -> None:
    clock, store = FakeClock(), LeaseStore()
    a = _elector(store, "a", clock)
    store.hang = True
    attempt = asyncio.create_task(a.try_acquire_or_renew())
    await settle()
    await clock.advance(4.9)
    assert not attempt.done()
    await clock.advance(0.1)  # max(renew_deadline / 2, 1s) = 5s
    assert attempt.done() and attempt.result() is False


async def test_two_candidates_racing_for_an_expired_lease_one_wins_by_resource_version() -> None:
    clock, store = FakeClock(), LeaseStore()
    a = _elector(store, "a", clock)
    await a.acquire()
    b, c = _elector(store, "b", clock), _elector(store, "c", clock)
    assert not await b.try_acquire_or_renew()
    assert not await c.try_acquire_or_renew()
    await clock.advance(15.0)
    # Both read the expired lease before either writes.
    assert store.record is not None
    await b.lock.get()
    await c.lock.get()
    results = await asyncio.gather(b.try_acquire_or_renew(), c.try_acquire_or_renew())
    assert sorted(results) == [False, True]
    assert store.record.holder_identity in {"b", "c"}
    assert store.record.leader_transitions == 1


async def test_fast_path_conflict_falls_back_to_the_slow_path_and_counts_it() -> None:
    clock, store = FakeClock(), LeaseStore()
    a = _elector(store, "a", clock, name="slowpath")
    await a.acquire()
    before = REGISTRY.get_sample_value("leader_election_slowpath_total", {"name": "slowpath"}) or 0.0
    store.bump_externally()
    await clock.advance(2.0)
    assert await a.try_acquire_or_renew()
    assert REGISTRY.get_sample_value("leader_election_slowpath_total", {"name": "slowpath"}) == before + 1
    assert store.record is not None and store.record.leader_transitions == 0


async def test_release_lets_a_successor_take_over_at_its_next_retry(tasks: list[asyncio.Task[None]]) -> None:
    clock, store = FakeClock(), LeaseStore()
    a = _elector(store, "a", clock, name="releasing")
    b = _elector(store, "b", clock)
    await a.acquire()
    acquire_b = _spawn(tasks, b.acquire())
    await settle()
    assert await a.release()
    assert store.record is not None
    assert store.record.holder_identity == "" and store.record.lease_duration_seconds == 1
    assert _gauge("releasing") == 0
    await clock.advance(2.0)
    assert acquire_b.done() and b.is_leader()
    assert store.record.leader_transitions == 1


async def test_release_does_not_overwrite_a_lease_someone_else_now_holds() -> None:
    clock, store = FakeClock(), LeaseStore()
    a, b = _elector(store, "a", clock), _elector(store, "b", clock)
    await a.acquire()
    assert not await b.try_acquire_or_renew()
    await clock.advance(15.0)
    assert await b.try_acquire_or_renew()
    assert await a.release()
    assert store.record is not None and store.record.holder_identity == "b"


async def test_forbidden_lease_access_retries_on_the_jittered_period_without_busy_looping(
    tasks: list[asyncio.Task[None]],
) -> None:
    from kuberay_py.client import Forbidden

    clock, store = FakeClock(), LeaseStore()
    store.fail = Forbidden(403, "Forbidden", 'leases.coordination.k8s.io "x" is forbidden')
    a = _elector(store, "a", clock, jitter=0.0)
    acquiring = _spawn(tasks, a.acquire())
    await settle()
    assert a.attempts == 1
    for _ in range(5):
        await clock.advance(2.0)
    assert a.attempts == 6 and not acquiring.done()  # one attempt per retry period, still trying
    store.fail = None
    await clock.advance(2.0)
    assert acquiring.done() and a.is_leader()
