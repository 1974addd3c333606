"""Leader election: client-go's ``tools/leaderelection`` algorithm, ported to asyncio.

Only one replica of the operator may run controllers, or two reconcilers would fight over the
same Pods. The replicas contend for one ``coordination.k8s.io/v1`` Lease; whoever holds it leads.
Why port client-go instead of using kubernetes_asyncio's ``leaderelection`` package: that one
judges expiry from the *remote* ``renewTime`` with the local wall clock, has no jitter, no
release on shutdown and no transition counter. client-go's rules, kept exactly here:

* **Validity is judged from local observation.** A candidate records *when it saw* the lease
  record change (``observed_time``, monotonic) and treats the lease as held until
  ``observed_time + leaseDurationSeconds``. Clock skew between nodes cannot make a candidate
  steal a lease early, because remote timestamps are never compared with local ones.
* **Acquire** retries every ``retry_period`` with jitter factor 1.2 (a sleep of
  ``retry_period * (1 + 1.2 * U[0,1))``), so candidates do not stampede the API server in step.
* **Renew** retries every ``retry_period`` for at most ``renew_deadline``; if no renewal
  succeeds within that, leadership is lost. Because ``renew_deadline < lease_duration``, the old
  leader gives up *before* any other candidate may consider the lease expired.
* **Optimistic concurrency.** Every write carries the resourceVersion last read, so of two
  candidates that both saw an expired lease exactly one update succeeds (the other gets a 409
  and simply tries again later). The leader's fast path updates from its cached copy without a
  GET; if that fails (``slowpath``) it re-reads and retries.
* **Release on cancel.** A leader that shuts down cleanly rewrites the lease with an empty holder
  and a 1 s duration, so a successor takes over at its next retry instead of a full lease later.

The timers run on an injected :class:`~kuberay_py.clock.Clock`, so unit tests step through
lease expiry on virtual time with a fake lock.

Each successful renewal is announced to the listeners given to
:meth:`LeaderElector.add_renew_listener`: the one place where "the Lease was just renewed" is
known, so a metric, a liveness signal or a test can follow renewals without polling the Lease.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol, TypeVar

import anyio
from prometheus_client import Counter, Gauge

from kuberay_py.clock import Clock, RealClock
from kuberay_py.log import get_logger
from kuberay_py.metrics import registry

__all__ = [
    "JITTER_FACTOR",
    "LeaderElectionRecord",
    "LeaderElector",
    "LockNotFound",
    "RenewListener",
    "ResourceLock",
]

JITTER_FACTOR = 1.2  # client-go's leaderelection.JitterFactor

log = get_logger(__name__)

MASTER_STATUS = Gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, "
    "0 indicates backup, 1 indicates master.",
    ["name"],
    registry=registry,
)
SLOWPATH_TOTAL = Counter(
    "leader_election_slowpath_total",
    "Total number of slow path exercised in renewing leader leases. 'name' is the string used to "
    "identify the lease. Please make sure to group by name.",
    ["name"],
    registry=registry,
)

T = TypeVar("T")

RenewListener = Callable[["LeaderElectionRecord"], None]


@dataclass(frozen=True)
class LeaderElectionRecord:
    """What the lock stores: client-go's ``LeaderElectionRecord`` (the Lease spec's fields)."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: datetime | None = None
    renew_time: datetime | None = None
    leader_transitions: int = 0


class LockNotFound(Exception):
    """The lock object does not exist yet (raised by :meth:`ResourceLock.get`)."""


class ResourceLock(Protocol):
    """The storage of the election record; client-go's ``resourcelock.Interface``.

    ``update`` must be conditional on the version last returned by ``get``/``create``/``update``
    (a 409 is raised as an exception), and must fail if neither was called yet.
    """

    @property
    def identity(self) -> str: ...

    def describe(self) -> str: ...

    async def get(self) -> LeaderElectionRecord: ...  # raises LockNotFound

    async def create(self, record: LeaderElectionRecord) -> None: ...

    async def update(self, record: LeaderElectionRecord) -> None: ...


class LeaderElector:
    """Acquire, hold and release one lock, with client-go's timing rules.

    Typical use (what the manager does)::

        elector = LeaderElector(lock, name="kuberay-operator")
        await elector.acquire()          # returns once this process leads
        ... start controllers ...
        await elector.hold()             # returns when leadership is lost
        # or, on shutdown: await elector.release()
    """

    def __init__(
        self,
        lock: ResourceLock,
        *,
        name: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        call_timeout: float | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if lease_duration <= renew_deadline:
            raise ValueError(
                f"lease_duration ({lease_duration}s) must be greater than renew_deadline ({renew_deadline}s)"
            )
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError(
                f"renew_deadline ({renew_deadline}s) must be greater than {JITTER_FACTOR} * retry_period "
                f"({retry_period}s)"
            )
        if lease_duration < 1 or retry_period <= 0:
            raise ValueError("lease_duration must be at least 1s and retry_period positive")
        if not lock.identity:
            raise ValueError("leader election identity must not be empty")
        self.lock = lock
        self.name = name
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        # controller-runtime gives the leader-election client a timeout of max(RenewDeadline/2, 1s).
        self.call_timeout = call_timeout if call_timeout is not None else max(renew_deadline / 2, 1.0)
        self.clock: Clock = clock or RealClock()
        self._rng = rng or random.Random()
        self.observed_record = LeaderElectionRecord()
        self.observed_time = float("-inf")
        self.next_attempt_at: float | None = None  # set while sleeping between attempts (for tests)
        self.attempts = 0
        self._reported_leader = ""
        self._renew_listeners: list[RenewListener] = []
        MASTER_STATUS.labels(name=name).set(0)

    # -- state ---------------------------------------------------------------------------------

    @property
    def identity(self) -> str:
        return self.lock.identity

    def is_leader(self) -> bool:
        return self.observed_record.holder_identity == self.identity

    def leader(self) -> str:
        """The holder this candidate last observed ("" if none)."""
        return self.observed_record.holder_identity

    def add_renew_listener(self, listener: RenewListener) -> Callable[[], None]:
        """Call ``listener`` with the written record after each successful renewal; returns its
        remover.

        Renewals only, not the first acquisition: what a listener learns is "this leader still
        holds the Lease", e.g. for a renewal metric or a watchdog. It runs on the elector's loop,
        which is the Lease's own thread when the manager runs one, so it must be quick and
        thread-safe (set a ``threading.Event``, increment a counter); an exception it raises is
        logged and does not affect the renewal.
        """
        self._renew_listeners.append(listener)

        def remove() -> None:
            if listener in self._renew_listeners:
                self._renew_listeners.remove(listener)

        return remove

    def _announce_renewal(self) -> None:
        for listener in list(self._renew_listeners):
            try:
                listener(self.observed_record)
            except Exception as err:  # a listener's bug must not cost the lease
                log.error("renew listener failed", lease=self.lock.describe(), error=str(err))

    def _is_lease_valid(self, now: float) -> bool:
        return self.observed_time + self.observed_record.lease_duration_seconds > now

    def _set_observed(self, record: LeaderElectionRecord) -> None:
        self.observed_record = record
        self.observed_time = self.clock.now()

    def _report_transition(self) -> None:
        holder = self.observed_record.holder_identity
        if holder != self._reported_leader:
            self._reported_leader = holder
            if holder and holder != self.identity:
                log.info("new leader elected", lease=self.lock.describe(), leader=holder)

    # -- timers ----------------------------------------------------------------------------------

    async def _sleep(self, seconds: float) -> None:
        self.next_attempt_at = self.clock.now() + seconds
        try:
            await self.clock.sleep(seconds)
        finally:
            self.next_attempt_at = None

    async def _call(self, fn: Callable[[], Awaitable[T]], deadline: float | None = None) -> T:
        """Run one lock call, cancelled at ``call_timeout`` (or the renew deadline, if sooner).

        The deadline is measured on the injected clock, so a fake clock controls it too.
        """
        limit = self.clock.now() + self.call_timeout
        if deadline is not None:
            limit = min(limit, deadline)
        result: list[T] = []
        error: list[Exception] = []
        async with anyio.create_task_group() as tg:

            async def watchdog() -> None:
                await self.clock.sleep(limit - self.clock.now())
                tg.cancel_scope.cancel()

            async def call() -> None:
                try:
                    result.append(await fn())
                except Exception as err:  # re-raised below, unwrapped from the task group
                    error.append(err)
                tg.cancel_scope.cancel()

            tg.start_soon(watchdog)
            tg.start_soon(call)
        if error:
            raise error[0]
        if not result:
            raise TimeoutError(f"leader election call on {self.lock.describe()} timed out")
        return result[0]

    # -- the algorithm -----------------------------------------------------------------------------

    async def try_acquire_or_renew(self, deadline: float | None = None) -> bool:
        """One attempt (client-go's ``tryAcquireOrRenew``); True when this candidate now leads."""
        self.attempts += 1
        now = self.clock.utcnow()
        desired = LeaderElectionRecord(
            holder_identity=self.identity,
            lease_duration_seconds=int(self.lease_duration),
            acquire_time=now,
            renew_time=now,
        )
        # 1. Fast path: the leader updates from its cached copy, no GET.
        if self.is_leader() and self._is_lease_valid(self.clock.now()):
            renewed = replace(
                desired,
                acquire_time=self.observed_record.acquire_time,
                leader_transitions=self.observed_record.leader_transitions,
            )
            try:
                await self._call(lambda: self.lock.update(renewed), deadline)
            except Exception as err:
                log.warning(
                    "failed to update lock optimistically, falling back to slow path",
                    lease=self.lock.describe(),
                    error=str(err),
                )
            else:
                self._set_observed(renewed)
                return True

        # 2. Read (or create) the record.
        try:
            old = await self._call(self.lock.get, deadline)
        except LockNotFound:
            try:
                await self._call(lambda: self.lock.create(desired), deadline)
            except Exception as err:
                log.warning(
                    "error initially creating leader election record",
                    lease=self.lock.describe(),
                    error=str(err),
                )
                return False
            self._set_observed(desired)
            return True
        except Exception as err:
            log.warning("error retrieving resource lock", lease=self.lock.describe(), error=str(err))
            return False

        # 3. Someone else holds a lease that has not expired *by our observation*.
        if old != self.observed_record:
            self._set_observed(old)
        if old.holder_identity and self._is_lease_valid(self.clock.now()) and not self.is_leader():
            log.debug(
                "lock is held and has not yet expired", lease=self.lock.describe(), holder=old.holder_identity
            )
            return False

        # 4. Take over (or renew through the slow path).
        if self.is_leader():
            desired = replace(
                desired, acquire_time=old.acquire_time, leader_transitions=old.leader_transitions
            )
            SLOWPATH_TOTAL.labels(name=self.name).inc()
        else:
            desired = replace(desired, leader_transitions=old.leader_transitions + 1)
        try:
            await self._call(lambda: self.lock.update(desired), deadline)
        except Exception as err:
            log.warning("failed to update lock", lease=self.lock.describe(), error=str(err))
            return False
        self._set_observed(desired)
        return True

    async def acquire(self) -> None:
        """Retry (jittered) until this candidate leads; returns then. Cancel to give up."""
        log.info("attempting to acquire leader lease", lease=self.lock.describe(), identity=self.identity)
        while True:
            ok = await self.try_acquire_or_renew()
            self._report_transition()
            if ok:
                MASTER_STATUS.labels(name=self.name).set(1)
                log.info("successfully acquired lease", lease=self.lock.describe(), identity=self.identity)
                return
            await self._sleep(self.retry_period * (1 + JITTER_FACTOR * self._rng.random()))

    async def hold(self) -> None:
        """Renew every ``retry_period``; returns when no renewal succeeded within ``renew_deadline``."""
        while True:
            deadline = self.clock.now() + self.renew_deadline
            renewed = False
            while True:  # client-go's PollUntilContextTimeout(retryPeriod, renewDeadline, immediate)
                if await self.try_acquire_or_renew(deadline):
                    renewed = True
                    self._announce_renewal()
                    break
                if self.clock.now() + self.retry_period >= deadline:
                    await self._sleep(max(0.0, deadline - self.clock.now()))
                    break
                await self._sleep(self.retry_period)
            self._report_transition()
            if not renewed:
                MASTER_STATUS.labels(name=self.name).set(0)
                log.error(
                    "failed to renew lease, leadership lost",
                    lease=self.lock.describe(),
                    identity=self.identity,
                    renew_deadline=self.renew_deadline,
                )
                return
            await self._sleep(self.retry_period)

    async def release(self) -> bool:
        """Give the lease up (client-go's ``release``), so a successor need not wait for expiry."""
        MASTER_STATUS.labels(name=self.name).set(0)
        try:
            current = await self._call(self.lock.get)
        except LockNotFound:
            log.info("lease lock not found on release", lease=self.lock.describe())
            return False
        except Exception as err:
            log.error("error retrieving resource lock on release", lease=self.lock.describe(), error=str(err))
            return False
        if current.holder_identity != self.identity:
            self._set_observed(current)
            return True
        now = self.clock.utcnow()
        released = LeaderElectionRecord(
            holder_identity="",
            lease_duration_seconds=1,
            acquire_time=now,
            renew_time=now,
            leader_transitions=current.leader_transitions,
        )
        try:
            await self._call(lambda: self.lock.update(released))
        except Exception as err:
            log.error("failed to release lease", lease=self.lock.describe(), error=str(err))
            return False
        self._set_observed(released)
        log.info("released leader lease", lease=self.lock.describe(), identity=self.identity)
        return True
