"""workqueue_* metrics under controller-runtime's names, labels and buckets, on a FakeClock."""

from __future__ import annotations

import asyncio
import contextlib
import itertools

from kuberay_py.clock import FakeClock, settle
from kuberay_py.metrics import exposition, registry
from kuberay_py.workqueue import LOW_PRIORITY, RateLimitingQueue, ShutDown

_n = itertools.count()


def fresh() -> tuple[str, FakeClock, RateLimitingQueue[str]]:
    name = f"wq-metrics-{next(_n)}"
    clock = FakeClock()
    return name, clock, RateLimitingQueue(name, clock=clock)


def value(metric: str, name: str, **extra: str) -> float | None:
    return registry.get_sample_value(metric, {"name": name, "controller": name, **extra})


async def test_adds_and_depth_count_ready_items_by_priority() -> None:
    name, _, q = fresh()
    q.add("a")
    q.add("a")  # deduped: not an add
    q.add("b", priority=LOW_PRIORITY)
    assert value("workqueue_adds_total", name) == 2
    assert value("workqueue_depth", name, priority="0") == 1
    assert value("workqueue_depth", name, priority="-100") == 1
    q.add("b")  # promoted: depth moves between priority series
    assert value("workqueue_depth", name, priority="0") == 2
    assert value("workqueue_depth", name, priority="-100") == 0
    await q.get()
    await q.get()
    assert value("workqueue_depth", name, priority="0") == 0


async def test_queue_and_work_durations_use_the_injected_clock() -> None:
    name, clock, q = fresh()
    q.add("a")
    await clock.advance(2.0)
    item = await q.get()
    await clock.advance(3.0)
    q.done(item)
    assert value("workqueue_queue_duration_seconds_sum", name) == 2.0
    assert value("workqueue_work_duration_seconds_sum", name) == 3.0
    assert value("workqueue_work_duration_seconds_count", name) == 1


async def test_histogram_buckets_are_controller_runtimes_1e_8_to_1e3() -> None:
    name, _, q = fresh()
    q.add("a")
    q.done(await q.get())
    text = exposition().decode()
    buckets = [
        line.split('le="')[1].split('"')[0]
        for line in text.splitlines()
        if line.startswith("workqueue_queue_duration_seconds_bucket") and f'name="{name}"' in line
    ]
    assert buckets[0] == "1e-08" and buckets[-2] == "1000.0" and buckets[-1] == "+Inf"
    assert len(buckets) == 13  # 12 buckets + Inf
    assert "workqueue_adds_created" not in text


async def test_retries_count_only_delayed_adds() -> None:
    name, _, q = fresh()
    q.add_after("a", 0)
    q.add_after("b", 1.0)
    q.add_rate_limited("c")
    assert value("workqueue_retries_total", name) == 2
    q.shutdown()


async def test_unfinished_work_and_longest_running_are_computed_when_scraped() -> None:
    name, clock, q = fresh()
    q.add("a")
    q.add("b")
    await q.get()
    await clock.advance(1.0)
    await q.get()
    await settle()
    await clock.advance(0.5)
    # a has run 1.5 s, b 0.5 s
    assert value("workqueue_unfinished_work_seconds", name) == 2.0
    assert value("workqueue_longest_running_processor_seconds", name) == 1.5
    q.done("a")
    await clock.advance(0.25)
    assert value("workqueue_unfinished_work_seconds", name) == 0.75
    assert value("workqueue_longest_running_processor_seconds", name) == 0.75
    q.shutdown()


async def test_an_idle_queue_arms_no_timer() -> None:
    """No periodic refresh: an idle operator's loop sleeps until something happens."""
    _, clock, q = fresh()
    q.add("a")
    q.done(await q.get())
    getter = asyncio.ensure_future(q.get())
    await settle()
    assert clock.sleepers == 0
    q.shutdown()
    with contextlib.suppress(ShutDown):
        await getter


async def test_unnamed_queue_reports_nothing() -> None:
    q: RateLimitingQueue[str] = RateLimitingQueue(clock=FakeClock())

    def workqueue_lines() -> list[str]:
        return [ln for ln in exposition().decode().splitlines() if ln.startswith("workqueue_")]

    before = workqueue_lines()
    q.add("a")
    q.done(await q.get())
    assert workqueue_lines() == before


async def test_priority_label_values_are_capped_at_25() -> None:
    name, _, q = fresh()
    for p in range(30):
        q.add(f"item-{p}", priority=p)
    labels = {
        line.split('priority="')[1].split('"')[0]
        for line in exposition().decode().splitlines()
        if line.startswith("workqueue_depth{") and f'name="{name}"' in line
    }
    assert labels == {str(p) for p in range(25)} | {"exceeded_cardinality_limit"}
    assert value("workqueue_depth", name, priority="exceeded_cardinality_limit") == 5


async def test_queues_sharing_a_name_share_series() -> None:
    name, clock, q1 = fresh()
    q2: RateLimitingQueue[str] = RateLimitingQueue(name, clock=clock)
    q1.add("a")
    q2.add("a")
    assert value("workqueue_adds_total", name) == 2
    assert value("workqueue_depth", name, priority="0") == 2
