"""An event loop on a thread of its own for the leader-election Lease.

Why: asyncio is cooperative. When the operator's loop has a long backlog (a burst of watch
events and reconciles, worst under a CPU quota such as KubeRay's chart default of 100m), a Lease
renewal's HTTP answer waits behind all of it. client-go renews from a goroutine the Go scheduler
preempts into; here a renewal that waits longer than ``renew_deadline`` loses leadership and the
operator exits, although nothing is wrong but load (seen in ``bench/cpu_quota.py``: 4 of 6 runs).
A thread gets its share of the interpreter every switch interval (5 ms) whatever the main loop is
doing, and a renewal needs only a few milliseconds of it.

The elector's coroutines (acquire, hold, release) run on this loop with a client of their own
(an aiohttp session belongs to one loop); the manager awaits them through
:meth:`LeaseThread.run`, and cancelling that await cancels the coroutine on the thread, so the
manager's cancel scopes work as before. The elector's state (``is_leader``, the observed record)
is plain attributes read under the GIL; its renew listeners (``add_renew_listener``) are called
on this thread, which is how a caller learns of renewals while its own loop is busy. Only the
real clock can be shared between loops, so a manager on an injected virtual clock keeps the
elector on its own loop (see ``Manager``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from kuberay_py.client import Client

__all__ = ["LeaseThread"]

T = TypeVar("T")

_JOIN_TIMEOUT = 5.0


class LeaseThread:
    """Runs coroutines on one daemon thread's event loop, started on first use."""

    def __init__(self, name: str, client: Client) -> None:
        self.name = name
        self._client = client  # the Lease's own client; closed on its loop by close()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _ensure_started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=self._serve, args=(loop,), name=self.name, daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    @staticmethod
    def _serve(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            loop.close()

    async def run(self, fn: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """``await fn()`` on the thread's loop; cancelling this await cancels it there."""
        loop = self._ensure_started()
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(fn(), loop))

    async def close(self) -> None:
        """Close the client on its loop, then stop the loop and join the thread (bounded)."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            await self.run(self._client.close)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            await asyncio.to_thread(thread.join, _JOIN_TIMEOUT)
            with self._lock:
                self._loop = self._thread = None
