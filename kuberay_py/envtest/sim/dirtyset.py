"""The work loop the simulator's controllers share: coalesced keys, one worker, back-off on errors.

Like a controller-runtime workqueue reduced to what a test-support controller needs: a key
marked many times is processed once, a failed key is marked again, and after a round with a
failure the next round waits (50 ms doubling to 1 s) so a broken API server is not hammered.
The back-off is a real sleep on purpose: it is not a timer the tests step.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Iterable
from typing import Any, Generic, TypeVar

import structlog

from kuberay_py.client import ApiError

__all__ = ["DirtySet"]

K = TypeVar("K", bound=Hashable)


class DirtySet(Generic[K]):
    def __init__(
        self,
        log: structlog.typing.FilteringBoundLogger,
        step: str,
        describe: Callable[[K], dict[str, Any]],
        order: Callable[[set[K]], Iterable[K]] = iter,
    ) -> None:
        """``step`` names one unit of work in ``log``'s lines, ``describe`` gives a key's log fields
        and ``order`` the order a round processes its keys in."""
        self._log = log
        self._step = step
        self._describe = describe
        self._order = order
        self._dirty: set[K] = set()
        self._wake = asyncio.Event()

    def mark(self, key: K) -> None:
        self._dirty.add(key)
        self._wake.set()

    async def run(self, process: Callable[[K], Awaitable[None]]) -> None:
        """Process marked keys forever."""
        delay = 0.0
        while True:
            await self._wake.wait()
            self._wake.clear()
            if delay:
                await asyncio.sleep(delay)  # back off after API errors
            batch, self._dirty = self._dirty, set()
            failed = False
            for key in self._order(batch):
                try:
                    await process(key)
                except (ApiError, OSError) as exc:
                    failed = True
                    self._log.info(f"{self._step} failed; retrying", **self._describe(key), error=str(exc))
                    self.mark(key)
                except Exception:
                    failed = True
                    self._log.exception(f"{self._step} crashed; retrying", **self._describe(key))
                    self.mark(key)
            delay = min(max(delay * 2, 0.05), 1.0) if failed else 0.0
