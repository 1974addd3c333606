"""Runnable groups: deferred start, graceful stop within a deadline, cancellation, failures."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import anyio

from kuberay_py.clock import FakeClock, settle
from kuberay_py.manager.runnables import RunnableGroup


@contextlib.asynccontextmanager
async def stopping_after_start(
    group: RunnableGroup, stop: Callable[[], Coroutine[Any, Any, bool]]
) -> AsyncIterator[asyncio.Future[bool]]:
    """Serve and start ``group`` (its members running), then begin ``stop()``; yields the stop,
    already past its first step, for the test to drive with its clock."""
    async with anyio.create_task_group() as tg:
        await tg.start(group.serve)
        group.start()
        await settle()
        stopping = asyncio.ensure_future(stop())
        await settle()
        yield stopping


async def test_runnables_start_only_when_the_group_starts() -> None:
    ran: list[str] = []
    group = RunnableGroup("g", lambda n, e: None)

    async def work() -> None:
        ran.append("work")

    group.add("work", work)
    async with anyio.create_task_group() as tg:
        await tg.start(group.serve)
        await settle()
        assert ran == []
        group.start()
        await settle()
        assert ran == ["work"]
        group.add("late", work)  # added after start: runs at once
        await settle()
        assert ran == ["work", "work"]
        assert await group.stop(0, FakeClock())


async def test_stop_asks_members_to_finish_and_waits_for_them() -> None:
    clock = FakeClock()
    group = RunnableGroup("g", lambda n, e: None)
    stop_flag = asyncio.Event()
    finished: list[str] = []

    async def drains() -> None:
        await stop_flag.wait()
        await clock.sleep(5)  # an in-flight reconcile finishing
        finished.append("drained")

    group.add("drains", drains, stop=stop_flag.set)
    async with stopping_after_start(group, lambda: group.stop(30, clock)) as stopping:
        assert not stopping.done()
        await clock.advance(5)
        assert await stopping is True
    assert finished == ["drained"]


async def test_members_still_running_at_the_deadline_are_cancelled() -> None:
    clock = FakeClock()
    group = RunnableGroup("g", lambda n, e: None)
    cancelled: list[bool] = []

    async def stubborn() -> None:
        try:
            await anyio.sleep_forever()
        except BaseException:
            cancelled.append(True)
            raise

    group.add("stubborn", stubborn, stop=lambda: None)  # asked to stop, ignores it
    async with stopping_after_start(group, lambda: group.stop(30, clock)) as stopping:
        await clock.advance(29)
        assert not stopping.done() and not cancelled
        await clock.advance(1)
        assert await stopping is False
    assert cancelled == [True]


async def test_abort_event_cuts_the_graceful_wait_short() -> None:
    clock = FakeClock()
    group = RunnableGroup("g", lambda n, e: None)
    group.add("forever", anyio.sleep_forever, stop=lambda: None)
    abort = asyncio.Event()
    async with stopping_after_start(group, lambda: group.stop(None, clock, abort=abort)) as stopping:
        assert not stopping.done()
        abort.set()
        assert await stopping is False


async def test_a_failing_runnable_is_reported_and_does_not_kill_its_siblings() -> None:
    errors: list[tuple[str, BaseException]] = []
    group = RunnableGroup("g", lambda n, e: errors.append((n, e)))
    sibling_alive = asyncio.Event()

    async def boom() -> None:
        raise RuntimeError("cache died")

    async def sibling() -> None:
        sibling_alive.set()
        await anyio.sleep_forever()

    group.add("boom", boom)
    group.add("sibling", sibling)
    async with anyio.create_task_group() as tg:
        await tg.start(group.serve)
        group.start()
        await settle()
        assert [n for n, _ in errors] == ["boom"] and str(errors[0][1]) == "cache died"
        assert sibling_alive.is_set()
        await group.stop(0, FakeClock())


async def test_a_member_without_stop_hook_is_cancelled_at_once() -> None:
    group = RunnableGroup("g", lambda n, e: None)
    cleaned = asyncio.Event()

    async def plain() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            cleaned.set()

    group.add("plain", plain)
    async with anyio.create_task_group() as tg:
        await tg.start(group.serve)
        group.start()
        await settle()
        assert await group.stop(30, FakeClock()) is True  # no virtual time had to pass
    assert cleaned.is_set()
