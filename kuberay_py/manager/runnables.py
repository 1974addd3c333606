"""Runnable groups: sets of long-running tasks started and stopped together, in order.

controller-runtime's manager keeps its runnables in groups (HTTP servers, caches, "others",
leader-election runnables) because shutdown order matters: controllers must stop before the
caches they read, and the lease must outlive the controllers so no successor starts reconciling
while this process still is. Each group here owns an anyio task group; stopping a group first
asks its members to finish (their ``stop`` callbacks, e.g. ``Controller.stop``), waits up to a
deadline for them to return, then cancels whatever is left. A member registered without a
``stop`` callback is cancelled at once (cancellation is its stop signal, like a Go runnable's
context), and can clean up in ``finally``.

A runnable that raises is logged and reported through ``on_error`` (the manager then shuts
down and re-raises it), mirroring controller-runtime, where a runnable's error ends ``Start``.
A runnable that simply returns is finished; that is not an error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus

from kuberay_py.clock import Clock
from kuberay_py.log import get_logger

__all__ = ["Runnable", "RunnableGroup", "wait_or_timeout"]

log = get_logger(__name__)

Runnable = Callable[[], Awaitable[None]]


async def wait_or_timeout(
    waits: list[Awaitable[Any]], timeout: float | None, clock: Clock, *, abort: asyncio.Event | None = None
) -> bool:
    """Wait until every awaitable is done; False if ``timeout`` (on ``clock``) or ``abort`` came first.

    ``timeout=None`` or a negative timeout waits forever (controller-runtime's convention for a
    negative graceful-shutdown timeout).
    """
    futures = {asyncio.ensure_future(w) for w in waits}
    if not futures:
        return True
    guards: set[asyncio.Future[Any]] = set()
    if timeout is not None and timeout >= 0:
        guards.add(asyncio.ensure_future(clock.sleep(timeout)))
    if abort is not None:
        guards.add(asyncio.ensure_future(abort.wait()))
    try:
        all_done = asyncio.ensure_future(asyncio.gather(*futures, return_exceptions=True))
        done, _ = await asyncio.wait({all_done, *guards}, return_when=asyncio.FIRST_COMPLETED)
        return all_done in done
    finally:
        for f in (*futures, *guards):
            f.cancel()


class RunnableGroup:
    """Tasks that start together and stop together; see the module docstring."""

    def __init__(self, name: str, on_error: Callable[[str, BaseException], None]) -> None:
        self.name = name
        self._on_error = on_error
        self._tg: TaskGroup | None = None
        self._scope: anyio.CancelScope | None = None
        self._queued: list[tuple[str, Runnable, bool]] = []
        self._stoppers: list[Callable[[], None]] = []
        self._unhooked: set[anyio.CancelScope] = set()
        self._active = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._finished = asyncio.Event()
        self.started = False
        self.stopped = False

    def add(self, name: str, fn: Runnable, *, stop: Callable[[], None] | None = None) -> None:
        """Queue a runnable (or start it now if the group already started)."""
        if self.stopped:
            raise RuntimeError(f"cannot add {name!r}: the {self.name} runnables are stopping")
        if stop is not None:
            self._stoppers.append(stop)
        if self.started:
            self._spawn(name, fn, stop is not None)
        else:
            self._queued.append((name, fn, stop is not None))

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Host the group's task group (run inside the manager's root task group)."""
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                async with anyio.create_task_group() as tg:
                    self._tg = tg
                    task_status.started()
                    await anyio.sleep_forever()
        finally:
            self._tg = None
            self._finished.set()

    def start(self) -> None:
        """Start everything queued; later additions start immediately."""
        if self.started or self.stopped:
            return
        self.started = True
        queued, self._queued = self._queued, []
        for name, fn, hooked in queued:
            self._spawn(name, fn, hooked)

    def _spawn(self, name: str, fn: Runnable, hooked: bool) -> None:
        if self._tg is None:
            raise RuntimeError(f"the {self.name} runnable group is not being served")
        self._active += 1
        self._idle.clear()
        self._tg.start_soon(self._guard, name, fn, hooked, name=f"{self.name}:{name}")

    async def _guard(self, name: str, fn: Runnable, hooked: bool) -> None:
        scope = anyio.CancelScope()
        if not hooked:
            self._unhooked.add(scope)
        try:
            with scope:
                await fn()
        except Exception as err:
            log.error("runnable failed", group=self.name, runnable=name, exc_info=err)
            self._on_error(name, err)
        finally:
            self._unhooked.discard(scope)
            self._active -= 1
            if self._active == 0:
                self._idle.set()

    async def stop(self, timeout: float | None, clock: Clock, *, abort: asyncio.Event | None = None) -> bool:
        """Ask members to finish, wait up to ``timeout``, then cancel the rest; True if all finished."""
        self.stopped = True
        for stopper in self._stoppers:
            try:
                stopper()
            except Exception as err:  # a broken stop hook must not block the rest of the shutdown
                log.error("runnable stop hook failed", group=self.name, exc_info=err)
        for scope in list(self._unhooked):  # without a stop hook, cancellation is the stop signal
            scope.cancel()
        graceful = True
        if self._active > len(self._unhooked):  # members with a stop hook are still finishing
            graceful = timeout != 0 and await wait_or_timeout(
                [self._idle.wait()], timeout, clock, abort=abort
            )
        if not graceful:
            log.warning(
                "runnables did not stop in time, cancelling them", group=self.name, still_running=self._active
            )
        if self._scope is not None:
            self._scope.cancel()
            await self._finished.wait()
        return graceful
