"""The controller: informer events in, one reconcile per key at a time out.

Events from the watched informers are mapped to :class:`Request` keys and added to a
:class:`~kuberay_py.workqueue.RateLimitingQueue`. As in controller-runtime, the handlers are
attached when the controller starts (:meth:`Controller.run`), not when it is built: a standby
replica waiting for the leader lease must not fill a queue nobody drains (its ``workqueue_depth``
would grow and alert). The informer replays the objects it already holds to a newly attached
handler as initial-list adds, so nothing is missed. :meth:`Controller.run` then waits for those
informers to sync (bounded by ``cache_sync_timeout``, two minutes by default as in
controller-runtime) and runs ``max_concurrent_reconciles`` workers.
The queue guarantees that a key is never held by two workers, so reconcilers need no locking per
object.

Each reconcile gets a fresh ``reconcile_id`` (uuid4) and runs with ``controller``, ``namespace``,
``name`` and ``reconcile_id`` bound in :mod:`structlog.contextvars`, so every line it logs says
which object it is about. The result is handled by controller-runtime's contract (see
:mod:`kuberay_py.controller.reconcile`); an exception never ends a worker.

Stopping: :meth:`Controller.stop` stops handing out work; reconciles in flight finish and
:meth:`run` returns. Keys still queued are dropped, like controller-runtime's priority queue on
shutdown: the next leader (or the next start) lists everything anyway. The manager bounds this with
its graceful-shutdown timeout by cancelling :meth:`run` if it takes too long.
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import Sequence
from typing import Any

import anyio
import structlog

from kuberay_py.clock import Clock, RealClock
from kuberay_py.controller import metrics as m
from kuberay_py.controller.handlers import EnqueueHandler, InformerLike, MapFn
from kuberay_py.controller.predicates import Predicate
from kuberay_py.controller.reconcile import Reconciler, Request, Result, TerminalError
from kuberay_py.log import get_logger
from kuberay_py.workqueue import RateLimiter, RateLimitingQueue, ShutDown

__all__ = ["DEFAULT_CACHE_SYNC_TIMEOUT", "Controller"]

DEFAULT_CACHE_SYNC_TIMEOUT = 120.0


class Controller:
    """Runs ``reconciler`` for every key its sources enqueue. Usually built with :class:`Builder`."""

    def __init__(
        self,
        name: str,
        reconciler: Reconciler,
        *,
        max_concurrent_reconciles: int = 1,
        rate_limiter: RateLimiter | None = None,
        cache_sync_timeout: float = DEFAULT_CACHE_SYNC_TIMEOUT,
        clock: Clock | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"controller name must be a non-empty string, got {name!r}")
        reconcile = getattr(reconciler, "reconcile", None)
        if reconcile is None or not inspect.iscoroutinefunction(reconcile):
            raise TypeError(f"{reconciler!r} has no 'async def reconcile(self, request)' method")
        if not isinstance(max_concurrent_reconciles, int) or max_concurrent_reconciles < 1:
            raise ValueError(
                f"max_concurrent_reconciles must be an int >= 1, got {max_concurrent_reconciles!r}"
            )
        if cache_sync_timeout <= 0:
            raise ValueError(f"cache_sync_timeout must be positive, got {cache_sync_timeout}")
        self.name = name
        self.reconciler = reconciler
        self.max_concurrent_reconciles = max_concurrent_reconciles
        self.cache_sync_timeout = cache_sync_timeout
        self._clock: Clock = clock or RealClock()
        self.queue: RateLimitingQueue[Request] = RateLimitingQueue(
            name, rate_limiter=rate_limiter, clock=self._clock
        )
        self._sources: list[tuple[str, InformerLike, EnqueueHandler]] = []
        self._sources_started = False
        self._started = False
        self._stopping = False
        m.init_controller_metrics(name, max_concurrent_reconciles)
        self._total = {r: m.RECONCILE_TOTAL.labels(name, r) for r in m.RESULTS}
        self._errors = m.RECONCILE_ERRORS.labels(name)
        self._terminal = m.TERMINAL_RECONCILE_ERRORS.labels(name)
        self._time = m.RECONCILE_TIME.labels(name)
        self._active = m.ACTIVE_WORKERS.labels(name)

    # ------------------------------------------------------------------ wiring
    def watch(
        self,
        informer: InformerLike,
        mapper: MapFn,
        predicates: Sequence[Predicate] = (),
        *,
        source: str = "",
        map_old_on_update: bool = True,
    ) -> EnqueueHandler:
        """Enqueue ``mapper(obj)`` for ``informer`` events passing ``predicates``.

        The handler is attached to the informer by :meth:`start_sources` (which :meth:`run` calls),
        or at once if the sources are already started.
        """
        handler = EnqueueHandler(
            self.name, source, self.queue, mapper, predicates, map_old_on_update=map_old_on_update
        )
        self._sources.append((source, informer, handler))
        if self._sources_started:
            informer.add_event_handler(handler)
        return handler

    def start_sources(self) -> None:
        """Attach the event handlers to their informers (idempotent; :meth:`run` does it first)."""
        if self._sources_started:
            return
        self._sources_started = True
        for _, informer, handler in self._sources:
            informer.add_event_handler(handler)

    def enqueue(self, request: Request, *, after: float | None = None, priority: int = 0) -> None:
        """Ask for a reconcile of ``request`` (now, or ``after`` seconds from now) from outside the sources.

        For components that learn about changes the API server does not report (a health checker
        seeing a Ray head stop serving, for instance).
        """
        if not isinstance(request, Request):
            raise TypeError(f"enqueue() takes a Request, got {request!r}")
        if after is not None and after > 0:
            self.queue.add_after(request, after, priority=priority)
        else:
            self.queue.add(request, priority=priority)

    # ------------------------------------------------------------------ running
    async def run(self) -> None:
        """Wait for the sources' caches, then reconcile until :meth:`stop` (or cancellation)."""
        if self._started:
            raise RuntimeError(f"controller {self.name!r} was already started")
        self._started = True
        try:
            self.start_sources()
            await self._wait_for_sources()
            if self._stopping:
                return
            get_logger("kuberay_py.controller").info(
                "starting workers", controller=self.name, worker_count=self.max_concurrent_reconciles
            )
            async with anyio.create_task_group() as tg:
                for _ in range(self.max_concurrent_reconciles):
                    tg.start_soon(self._worker)
        finally:
            self.queue.shutdown()
        get_logger("kuberay_py.controller").info("all workers finished", controller=self.name)

    def stop(self) -> None:
        """Stop handing out work; in-flight reconciles finish, then :meth:`run` returns."""
        self._stopping = True
        self.queue.shutdown()

    @property
    def started(self) -> bool:
        return self._started

    @property
    def stopping(self) -> bool:
        return self._stopping

    async def _wait_for_sources(self) -> None:
        pending = [(src, inf) for src, inf, _ in self._sources if not inf.has_synced()]
        if not pending:
            return

        async def wait_all() -> None:
            for _, informer in pending:
                await informer.wait_for_sync()

        waiter = asyncio.ensure_future(wait_all())
        timer = asyncio.ensure_future(self._clock.sleep(self.cache_sync_timeout))
        try:
            await asyncio.wait({waiter, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            if not waiter.done():
                waiter.cancel()
        if waiter.cancelled() or not waiter.done():
            unsynced = [src for src, inf in pending if not inf.has_synced()]
            raise TimeoutError(
                f"controller {self.name!r}: timed out after {self.cache_sync_timeout}s waiting for "
                f"caches to sync: {', '.join(unsynced) or '?'}"
            )
        waiter.result()  # re-raise a failure from wait_for_sync

    async def _worker(self) -> None:
        queue = self.queue
        while not self._stopping:
            try:
                request, priority = await queue.get_with_priority()
            except ShutDown:
                return
            try:
                if self.stopping:  # stop() came while this item was queued: drop it, as documented
                    return
                self._active.inc()
                try:
                    await self._reconcile_handler(request, priority)
                finally:
                    self._active.dec()
            finally:
                queue.done(request)

    async def _reconcile_handler(self, request: Request, priority: int) -> None:
        clock = self._clock
        queue = self.queue
        start = clock.now()
        reconcile_id = str(uuid.uuid4())
        with structlog.contextvars.bound_contextvars(
            controller=self.name, namespace=request.namespace, name=request.name, reconcile_id=reconcile_id
        ):
            try:
                result: Any = await self.reconciler.reconcile(request)
                if not isinstance(result, Result):
                    raise TypeError(f"reconcile() returned {result!r}; it must return a Result")
            except TerminalError as exc:
                self._terminal.inc()
                self._errors.inc()
                self._total["error"].inc()
                get_logger("kuberay_py.controller").error(
                    "Reconciler error (terminal, not requeued)", error=str(exc), exc_info=True
                )
            except Exception as exc:
                queue.add_rate_limited(request, priority=priority)
                self._errors.inc()
                self._total["error"].inc()
                get_logger("kuberay_py.controller").error(
                    "Reconciler error",
                    error=f"{type(exc).__name__}: {exc}",
                    requeues=queue.num_requeues(request),
                    exc_info=True,
                )
            else:
                if result.requeue_after is not None and result.requeue_after > 0:
                    queue.forget(request)
                    queue.add_after(request, result.requeue_after, priority=priority)
                    self._total["requeue_after"].inc()
                elif result.requeue:
                    queue.add_rate_limited(request, priority=priority)
                    self._total["requeue"].inc()
                else:
                    queue.forget(request)
                    self._total["success"].inc()
            finally:
                self._time.observe(clock.now() - start)
