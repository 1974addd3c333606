"""client-go's rate-limiting workqueue on asyncio, with controller-runtime's priorities.

Why a controller needs more than ``asyncio.Queue``: events arrive far faster than reconciles run,
and a reconcile is level-triggered (it reads the whole object), so ten events for one key must
cause one reconcile, never two reconciles of the same key at once, and never a lost update. The
rules (``k8s.io/client-go/util/workqueue``):

* ``dirty`` holds every item that needs processing, ``processing`` every item a worker holds.
  ``add`` of a dirty item is a no-op (dedupe). ``add`` of an item being processed only marks it
  dirty; ``done`` then queues it again, so it runs once more, after the current run, by one worker.
* ``add_after(item, d)`` parks the item in a min-heap by ready time; a second ``add_after`` for a
  parked item only ever moves it *earlier*. Parked items are separate from ``dirty``: when the time
  comes they go through ``add`` (and its dedupe) like any other add.
* ``add_rate_limited`` = ``add_after(item, limiter.when(item))``; ``forget`` resets the limiter
  only (``done`` is still required); ``num_requeues`` asks the limiter.
* ``shutdown``: further adds are ignored, parked items are dropped, workers keep getting what was
  already queued and then :class:`ShutDown`. ``shutdown_with_drain`` also waits (optionally with a
  timeout) until nothing is being processed.

Priorities come from controller-runtime's priority queue (the default since v0.23, so what KubeRay
runs on): ready items are served highest priority first, FIFO within a priority, and a duplicate
add keeps the higher priority. Informer handlers add initial-list and resync events at
:data:`LOW_PRIORITY`, so a restart's thousand-object replay does not delay a live change.

All timing goes through the injected :class:`~kuberay_py.clock.Clock`, so tests step through
back-off schedules with :class:`~kuberay_py.clock.FakeClock` instead of sleeping.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from kuberay_py.clock import Clock, RealClock
from kuberay_py.workqueue.metrics import QueueMetrics
from kuberay_py.workqueue.rate_limiters import RateLimiter, default_rate_limiter

__all__ = ["LOW_PRIORITY", "RateLimitingQueue", "ShutDown"]

LOW_PRIORITY = -100
"""controller-runtime's ``handler.LowPriority``: initial-list and resync events."""

"""client-go's ``defaultUnfinishedWorkUpdatePeriod``."""

T = TypeVar("T", bound=Hashable)


class ShutDown(Exception):
    """Raised by :meth:`RateLimitingQueue.get` once the queue is shut down and empty."""


class RateLimitingQueue(Generic[T]):
    """See the module docstring for the rules. Items must be hashable (and are compared by equality).

    ``name`` enables the ``workqueue_*`` metrics (labels ``name``/``controller`` = ``name``).
    """

    def __init__(
        self,
        name: str | None = None,
        *,
        rate_limiter: RateLimiter | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.name = name
        self._clock: Clock = clock or RealClock()
        self.rate_limiter: RateLimiter = (
            rate_limiter if rate_limiter is not None else default_rate_limiter(clock=self._clock)
        )
        self._metrics = QueueMetrics(name, self._clock) if name else None
        self._tickets = itertools.count()
        # dirty: item -> priority. queued (subset of dirty, not processing): item -> heap ticket.
        self._dirty: dict[T, int] = {}
        self._queued: dict[T, int] = {}
        self._ready: list[tuple[int, int, T]] = []  # (-priority, ticket, item); stale tickets skipped
        self._processing: set[T] = set()
        # Parked items: item -> [ready_at, priority, ticket]; heap of (ready_at, ticket, item).
        self._waiting: dict[T, list[float | int]] = {}
        self._waiting_heap: list[tuple[float, int, T]] = []
        self._getters: deque[asyncio.Future[None]] = deque()
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._shutting_down = False
        self._timer: asyncio.Task[None] | None = None
        self._timer_deadline = float("inf")

    # ------------------------------------------------------------------ adding
    def add(self, item: T, *, priority: int = 0) -> None:
        """Mark ``item`` as needing processing. Ignored once shut down."""
        if self._shutting_down:
            return
        current = self._dirty.get(item)
        if current is not None:
            if priority > current:
                self._dirty[item] = priority
                if self._metrics is not None:
                    self._metrics.reprioritise(current, priority)
                if item in self._queued:
                    self._push(item, priority)  # the old heap entry becomes stale
            return
        self._dirty[item] = priority
        if self._metrics is not None:
            self._metrics.add(item, priority)
        if item in self._processing:
            return  # done() queues it again
        self._push(item, priority)

    def add_after(self, item: T, delay: float, *, priority: int = 0) -> None:
        """Add ``item`` once ``delay`` seconds have passed; an earlier pending time always wins."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(item, priority=priority)
            return
        try:
            loop = asyncio.get_running_loop()  # the timer needs one; fail before recording anything
        except RuntimeError:
            raise RuntimeError("add_after/add_rate_limited need a running event loop") from None
        if self._metrics is not None:
            self._metrics.retry()
        ready_at = self._clock.now() + delay
        entry = self._waiting.get(item)
        if entry is not None:
            entry[1] = max(int(entry[1]), priority)
            if ready_at >= entry[0]:
                return
            entry[0] = ready_at
            entry[2] = ticket = next(self._tickets)
        else:
            ticket = next(self._tickets)
            self._waiting[item] = [ready_at, priority, ticket]
        heapq.heappush(self._waiting_heap, (ready_at, ticket, item))
        if ready_at < self._timer_deadline:
            self._arm_timer(loop, ready_at)

    def add_rate_limited(self, item: T, *, priority: int = 0) -> None:
        """Add ``item`` after the rate limiter's delay for it (which counts one more failure)."""
        if self._shutting_down:
            return
        self.add_after(item, self.rate_limiter.when(item), priority=priority)

    def forget(self, item: T) -> None:
        """Reset the item's failure count. It does not remove the item: ``done`` is still required."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)

    # ------------------------------------------------------------------ getting
    async def get(self) -> T:
        """The next item (highest priority first, FIFO within one). Raises :class:`ShutDown`."""
        item, _ = await self.get_with_priority()
        return item

    async def get_with_priority(self) -> tuple[T, int]:
        """Like :meth:`get`, also returning the priority the item was queued with."""
        while not self._queued:
            if self._shutting_down:
                raise ShutDown(f"workqueue {self.name!r} is shut down")
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                fut.cancel()
                try:
                    self._getters.remove(fut)
                except ValueError:
                    pass
                # We may have been woken and cancelled in the same turn: pass the wake-up on.
                if self._queued or self._shutting_down:
                    self._wake_one()
                raise
        ready = self._ready
        queued = self._queued
        while True:
            _, ticket, item = heapq.heappop(ready)
            if queued.get(item) == ticket:
                break
        del queued[item]
        priority = self._dirty.pop(item)
        self._processing.add(item)
        if self._metrics is not None:
            self._metrics.get(item, priority)
        return item, priority

    def done(self, item: T) -> None:
        """The worker finished ``item``. If it was re-added meanwhile, it is queued again now."""
        try:
            self._processing.remove(item)
        except KeyError:
            raise ValueError(f"done({item!r}): the item is not being processed (not from get()?)") from None
        if self._metrics is not None:
            self._metrics.done(item)
        priority = self._dirty.get(item)
        if priority is not None:
            self._push(item, priority)
        elif not self._processing and self._drain_waiters:
            self._release_drain_waiters()

    def __len__(self) -> int:
        """Items ready to be handed out (not parked, not being processed). Informational only."""
        return len(self._queued)

    @property
    def processing(self) -> int:
        return len(self._processing)

    @property
    def waiting(self) -> int:
        """Items parked by ``add_after`` / ``add_rate_limited`` that are not yet ready."""
        return len(self._waiting)

    # ------------------------------------------------------------------ shutdown
    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def shutdown(self) -> None:
        """Stop accepting adds and drop parked items; workers drain what is queued, then get ShutDown.

        Calling it while :meth:`shutdown_with_drain` waits makes that wait return at once.
        """
        self._shutting_down = True
        self._waiting.clear()
        self._waiting_heap.clear()
        self._timer_deadline = float("inf")
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        while self._getters:
            fut = self._getters.popleft()
            if not fut.done():
                fut.set_result(None)
        self._release_drain_waiters()

    async def shutdown_with_drain(self, timeout: float | None = None) -> bool:
        """:meth:`shutdown`, then wait until no item is being processed. False if ``timeout`` ran out."""
        if timeout is not None and timeout < 0:
            raise ValueError(f"timeout must not be negative, got {timeout}")
        self.shutdown()
        if not self._processing:
            return True
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._drain_waiters.append(fut)
        if timeout is None:
            await fut
            return not self._processing
        timer = asyncio.ensure_future(self._clock.sleep(timeout))
        try:
            await asyncio.wait({fut, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            if not fut.done():
                fut.cancel()
                self._drain_waiters.remove(fut)
        return not self._processing

    # ------------------------------------------------------------------ internals
    def _push(self, item: T, priority: int) -> None:
        ticket = next(self._tickets)
        self._queued[item] = ticket
        heapq.heappush(self._ready, (-priority, ticket, item))
        self._wake_one()

    def _wake_one(self) -> None:
        getters = self._getters
        while getters:
            fut = getters.popleft()
            if not fut.done():
                fut.set_result(None)
                return

    def _release_drain_waiters(self) -> None:
        waiters, self._drain_waiters = self._drain_waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    def _arm_timer(self, loop: asyncio.AbstractEventLoop, deadline: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_deadline = deadline
        self._timer = loop.create_task(self._waiting_loop(deadline))

    async def _waiting_loop(self, deadline: float) -> None:
        """Sleep until the earliest parked item is due, add all that are due, repeat (client-go)."""
        clock = self._clock
        heap = self._waiting_heap
        waiting = self._waiting
        while True:
            delay = deadline - clock.now()
            if delay > 0:
                await clock.sleep(delay)
            now = clock.now()
            while heap and heap[0][0] <= now:
                _, ticket, item = heapq.heappop(heap)
                entry = waiting.get(item)
                if entry is None or entry[2] != ticket:
                    continue  # superseded by an earlier add_after
                del waiting[item]
                self.add(item, priority=int(entry[1]))
            while heap and not self._is_live(heap[0]):
                heapq.heappop(heap)  # drop stale heads so the next deadline is a live one
            if not heap:
                self._timer = None
                self._timer_deadline = float("inf")
                return
            deadline = self._timer_deadline = heap[0][0]

    def _is_live(self, head: tuple[float, int, T]) -> bool:
        entry = self._waiting.get(head[2])
        return entry is not None and entry[2] == head[1]
