"""Running a component of this project (an Informer, a Cache, the simulator) as a task of the
test's own loop for the length of a block: each of them ``run()``s until cancelled, and a test
that forgot to cancel and await it leaked a task into the next test."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable
from typing import Protocol, TypeVar

__all__ = ["running"]


class Runs(Protocol):
    def run(self) -> Awaitable[None]: ...


R = TypeVar("R", bound=Runs)


@contextlib.asynccontextmanager
async def running(runner: R) -> AsyncIterator[R]:
    """``runner.run()`` for the block (which gets ``runner``); cancelled and awaited after it."""
    task = asyncio.ensure_future(runner.run())
    try:
        yield runner
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
