"""Each client-go workqueue rule pinned by its own test, on a FakeClock (no sleeps)."""

from __future__ import annotations

import asyncio

import pytest

from kuberay_py.clock import FakeClock, settle
from kuberay_py.workqueue import LOW_PRIORITY, RateLimitingQueue, ShutDown


def new_queue(clock: FakeClock | None = None, **kw: object) -> RateLimitingQueue[str]:
    return RateLimitingQueue(clock=clock or FakeClock(), **kw)  # type: ignore[arg-type]


async def drain_ready(q: RateLimitingQueue[str]) -> list[str]:
    out = []
    while len(q):
        item = await q.get()
        out.append(item)
        q.done(item)
    return out


async def test_add_dedupes_while_queued() -> None:
    q = new_queue()
    q.add("a")
    q.add("a")
    q.add("b")
    q.add("a")
    assert len(q) == 2
    assert await drain_ready(q) == ["a", "b"]
    assert len(q) == 0


async def test_items_are_fifo_within_a_priority() -> None:
    q = new_queue()
    for x in "cab":
        q.add(x)
    assert await drain_ready(q) == ["c", "a", "b"]


async def test_get_blocks_until_an_item_is_added() -> None:
    q = new_queue()
    getter = asyncio.create_task(q.get())
    await settle()
    assert not getter.done()
    q.add("a")
    assert await getter == "a"


async def test_item_being_processed_is_not_handed_to_a_second_worker() -> None:
    q = new_queue()
    q.add("a")
    assert await q.get() == "a"
    q.add("a")  # re-added while processing
    assert len(q) == 0  # not available to anyone else yet
    second = asyncio.create_task(q.get())
    await settle()
    assert not second.done()
    q.done("a")
    assert await second == "a"


async def test_re_add_while_processing_runs_exactly_once_more_after_done() -> None:
    q = new_queue()
    q.add("a")
    item = await q.get()
    q.add("a")
    q.add("a")
    q.add("a")
    q.done(item)
    assert len(q) == 1
    assert await drain_ready(q) == ["a"]
    assert len(q) == 0


async def test_done_without_re_add_does_not_requeue() -> None:
    q = new_queue()
    q.add("a")
    q.done(await q.get())
    assert len(q) == 0 and q.processing == 0


async def test_done_for_an_item_not_being_processed_is_a_clear_error() -> None:
    q = new_queue()
    q.add("a")
    with pytest.raises(ValueError, match="not being processed"):
        q.done("a")
    assert len(q) == 1  # nothing lost


async def test_add_after_makes_item_ready_only_when_the_delay_passes() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add_after("a", 5.0)
    await settle()
    assert len(q) == 0 and q.waiting == 1
    await clock.advance(4.999)
    assert len(q) == 0
    await clock.advance(0.001)
    assert len(q) == 1 and q.waiting == 0
    assert await q.get() == "a"


async def test_add_after_with_non_positive_delay_adds_immediately() -> None:
    q = new_queue()
    q.add_after("a", 0)
    q.add_after("b", -1)
    assert len(q) == 2


async def test_add_after_earliest_time_wins() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add_after("a", 10.0)
    q.add_after("a", 2.0)  # earlier: moves it forward
    q.add_after("a", 5.0)  # later: ignored
    assert q.waiting == 1
    await clock.advance(2.0)
    assert len(q) == 1
    q.done(await q.get())
    await clock.advance(10.0)
    assert len(q) == 0  # the superseded 5 s and 10 s times never fire


async def test_delayed_items_become_ready_in_time_order() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add_after("late", 3.0)
    q.add_after("early", 1.0)
    q.add_after("mid", 2.0)
    await clock.advance(3.0)
    assert await drain_ready(q) == ["early", "mid", "late"]


async def test_delayed_item_that_is_already_queued_is_deduped_when_it_fires() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add_after("a", 1.0)
    q.add("a")
    await clock.advance(1.0)
    assert len(q) == 1


async def test_blocked_getter_wakes_when_a_delayed_item_becomes_ready() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    getter = asyncio.create_task(q.get())
    q.add_after("a", 1.0)
    await settle()
    assert not getter.done()
    await clock.advance(1.0)
    assert await getter == "a"


async def test_add_rate_limited_backs_off_exponentially_per_item() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add_rate_limited("a")  # 5 ms
    q.add_rate_limited("b")  # 5 ms (independent item)
    await clock.advance(0.005)
    assert await drain_ready(q) == ["a", "b"]
    q.add_rate_limited("a")  # second failure: 10 ms
    await clock.advance(0.009)
    assert len(q) == 0
    await clock.advance(0.001)
    assert len(q) == 1
    assert q.num_requeues("a") == 2
    assert q.num_requeues("b") == 1


async def test_forget_resets_back_off_but_does_not_remove_the_item() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    for _ in range(3):
        q.add_rate_limited("a")
    assert q.num_requeues("a") == 3
    q.forget("a")
    assert q.num_requeues("a") == 0
    assert q.waiting == 1  # still parked: forget only resets the limiter
    q.add_rate_limited("a")  # back to 5 ms
    await clock.advance(0.005)
    assert len(q) == 1


async def test_higher_priority_is_served_first() -> None:
    q = new_queue()
    q.add("initial-1", priority=LOW_PRIORITY)
    q.add("initial-2", priority=LOW_PRIORITY)
    q.add("live")
    q.add("urgent", priority=10)
    assert await drain_ready(q) == ["urgent", "live", "initial-1", "initial-2"]


async def test_duplicate_add_keeps_the_higher_priority() -> None:
    q = new_queue()
    q.add("a", priority=LOW_PRIORITY)
    q.add("b")
    q.add("a")  # a live event for an item queued by the initial list: promoted
    q.add("b", priority=LOW_PRIORITY)  # a lower-priority duplicate does not demote
    assert await drain_ready(q) == ["b", "a"]


async def test_priority_of_item_re_added_while_processing_is_kept() -> None:
    q = new_queue()
    q.add("a")
    item, prio = await q.get_with_priority()
    assert prio == 0
    q.add("a", priority=LOW_PRIORITY)
    q.add("b")
    q.done(item)
    assert [await q.get_with_priority() for _ in range(2)] == [("b", 0), ("a", LOW_PRIORITY)]


async def test_shutdown_ignores_new_adds_and_lets_workers_drain_queued_items() -> None:
    q = new_queue()
    q.add("a")
    q.add("b")
    q.shutdown()
    q.add("c")
    q.add_after("d", 0)
    q.add_rate_limited("e")
    assert q.shutting_down
    assert await q.get() == "a"
    assert await q.get() == "b"
    with pytest.raises(ShutDown):
        await q.get()


async def test_shutdown_wakes_blocked_getters_with_shutdown() -> None:
    q = new_queue()
    getters = [asyncio.create_task(q.get()) for _ in range(3)]
    await settle()
    q.shutdown()
    for g in getters:
        with pytest.raises(ShutDown):
            await g


async def test_shutdown_drops_parked_items() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add_after("a", 1.0)
    q.shutdown()
    await clock.advance(5.0)
    assert len(q) == 0 and q.waiting == 0
    with pytest.raises(ShutDown):
        await q.get()


async def test_item_dirtied_during_processing_still_drains_after_shutdown() -> None:
    q = new_queue()
    q.add("a")
    item = await q.get()
    q.add("a")
    q.shutdown()
    q.done(item)
    assert await q.get() == "a"


async def test_shutdown_with_drain_waits_for_items_being_processed() -> None:
    q = new_queue()
    q.add("a")
    item = await q.get()
    drain = asyncio.create_task(q.shutdown_with_drain())
    await settle()
    assert not drain.done()
    assert q.shutting_down
    q.done(item)
    assert await drain is True


async def test_shutdown_with_drain_returns_at_once_when_idle() -> None:
    q = new_queue()
    assert await q.shutdown_with_drain(timeout=1.0) is True


async def test_shutdown_with_drain_gives_up_after_its_timeout() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add("a")
    await q.get()
    drain = asyncio.create_task(q.shutdown_with_drain(timeout=30.0))
    await settle()
    await clock.advance(29.0)
    assert not drain.done()
    await clock.advance(1.0)
    assert await drain is False
    assert q.processing == 1


async def test_plain_shutdown_aborts_a_drain_wait() -> None:
    q = new_queue()
    q.add("a")
    await q.get()
    drain = asyncio.create_task(q.shutdown_with_drain())
    await settle()
    q.shutdown()
    assert await drain is False


async def test_cancelled_getter_does_not_swallow_an_item() -> None:
    q = new_queue()
    first = asyncio.create_task(q.get())
    second = asyncio.create_task(q.get())
    await settle()
    q.add("a")
    first.cancel()  # woken and cancelled in the same turn
    await settle()
    assert await second == "a"
    assert first.cancelled()


def test_add_after_outside_an_event_loop_fails_before_recording_anything() -> None:
    q = new_queue()
    with pytest.raises(RuntimeError, match="running event loop"):
        q.add_after("a", 1.0)
    assert q.waiting == 0
