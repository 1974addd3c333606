"""Waiting on eventually-consistent state, shared by the envtest, scenario and reliability suites.

Tests wait for an outcome in the API server (never for a fixed time); the bound only turns
"stuck" into a failure that shows the last value seen. It is not a performance assertion.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import Any

from kuberay_py.client import NotFound

__all__ = ["condition", "consistently", "eventually", "poll"]

STEP = 0.05  # between two looks; only the deadline means anything


async def eventually(
    fn: Callable[[], Any],
    what: str = "condition",
    timeout: float = 30.0,
    *,
    tolerate: tuple[type[BaseException], ...] = (NotFound,),
) -> Any:
    """Poll ``fn`` until it returns something truthy (like Gomega's Eventually) and return that.

    ``fn`` may be a coroutine function (a read from the API server) or a plain predicate (state
    another task of this loop changes, e.g. a FakeClock's sleepers).

    ``tolerate``: errors that count as "not yet" (by default NotFound, for objects the
    operator has still to create); pass ``()`` where any error must fail at once.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: Any = None
    while True:
        try:
            last = fn()
            if inspect.isawaitable(last):
                last = await last
        except tolerate:
            last = None
        if last:
            return last
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}; last value: {last!r}")
        await asyncio.sleep(STEP)


async def consistently(fn: Callable[[], Any], what: str, duration: float = 1.0) -> None:
    """Fail as soon as ``fn`` (a coroutine function or a plain predicate) is falsy within
    ``duration`` (like Gomega's Consistently): state the operator must leave alone for a while,
    e.g. no extra Pods after a scale-up settled."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + duration
    while loop.time() < deadline:
        value = fn()
        if inspect.isawaitable(value):
            value = await value
        if not value:
            raise AssertionError(f"{what} stopped holding (got {value!r})")
        await asyncio.sleep(STEP)


def poll(check: Callable[[], bool], *, timeout: float, what: str) -> None:
    """``eventually`` for a thread with no event loop (e.g. waiting on another process): re-evaluate
    ``check`` until it holds, failing at the deadline."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(STEP)


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    """The status condition of type ``type_`` (empty when the object has none)."""
    for item in (obj.get("status") or {}).get("conditions") or []:
        if item["type"] == type_:
            return dict(item)
    return {}
