"""Injectable time, so every timer in the runtime can be tested without sleeping.

The workqueue's delays, leader election's lease arithmetic and the head-proxy checker's result
cache all ask a :class:`Clock` for the time and sleep through it. Production code uses
:class:`RealClock` (the event loop's monotonic clock). Tests use :class:`FakeClock`, whose time
only moves when the test calls :meth:`FakeClock.advance`; sleepers whose deadline has passed are
woken in deadline order, so a test can step through back-off schedules exactly.

Example::

    clock = FakeClock()
    queue = RateLimitingQueue(clock=clock)
    queue.add_after("a", 5.0)
    await clock.advance(5.0)   # "a" is now ready, no real time has passed
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "FakeClock", "RealClock", "format_rfc3339", "parse_rfc3339"]


@runtime_checkable
class Clock(Protocol):
    """Monotonic time in seconds plus a sleep that honours it, and wall-clock time for timestamps."""

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...

    def utcnow(self) -> datetime: ...


def format_rfc3339(value: datetime) -> str:
    """``metav1.Time`` on the wire: RFC 3339 in UTC with whole seconds, as the API server writes it."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(value: object) -> datetime | None:
    """An API timestamp (``Time`` or ``MicroTime``) as an aware datetime; None when absent or malformed,
    so a hand-edited object never crashes a reconcile."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


class RealClock:
    """The event loop's clock; ``utcnow`` is the system's wall clock."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    def utcnow(self) -> datetime:
        return datetime.now(UTC)


class FakeClock:
    """Virtual time: nothing moves until :meth:`advance` is awaited.

    ``utcnow`` starts at a fixed instant and moves with ``now`` so that timestamps written into
    API objects stay consistent with the monotonic deadlines derived from them.
    """

    def __init__(self, start: float = 1000.0, wall_start: datetime | None = None) -> None:
        self._now = start
        self._wall0 = wall_start or datetime(2026, 1, 1, tzinfo=UTC)
        self._start = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def utcnow(self) -> datetime:
        return self._wall0 + timedelta(seconds=self._now - self._start)

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), fut))
        try:
            await fut
        finally:
            if not fut.done():
                fut.cancel()

    @property
    def sleepers(self) -> int:
        """How many sleeps are pending (cancelled ones excluded); lets tests wait for a timer to be armed."""
        return sum(1 for _, _, f in self._sleepers if not f.done())

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking every sleeper whose deadline is reached, in deadline order.

        Between wake-ups the event loop is given a few turns so woken tasks can react (and possibly
        arm new timers that also fall inside the window) before time moves on.
        """
        target = self._now + seconds
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, fut = heapq.heappop(self._sleepers)
            if fut.done():
                continue
            self._now = max(self._now, deadline)
            fut.set_result(None)
            await settle()
        self._now = target
        await settle()


async def settle(turns: int = 10) -> None:
    """Let ready tasks run for a few loop iterations (no real time passes)."""
    for _ in range(turns):
        await asyncio.sleep(0)
