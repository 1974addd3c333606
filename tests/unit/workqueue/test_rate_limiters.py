"""The back-off schedules of client-go's rate limiters, read off a FakeClock."""

from __future__ import annotations

import pytest

from kuberay_py.clock import FakeClock
from kuberay_py.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    RateLimitingQueue,
    default_rate_limiter,
    per_item_rate_limiter,
)


def test_exponential_schedule_is_5ms_doubling_capped_at_1000s() -> None:
    rl = ItemExponentialFailureRateLimiter()
    delays = [rl.when("a") for _ in range(20)]
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert delays[17] == pytest.approx(655.36)
    assert delays[18] == 1000.0 and delays[19] == 1000.0
    assert rl.num_requeues("a") == 20


def test_exponential_survives_absurd_failure_counts() -> None:
    rl = ItemExponentialFailureRateLimiter()
    for _ in range(5000):
        delay = rl.when("a")
    assert delay == 1000.0


def test_exponential_is_per_item_and_forget_resets() -> None:
    rl = ItemExponentialFailureRateLimiter()
    rl.when("a")
    rl.when("a")
    assert rl.when("b") == 0.005
    rl.forget("a")
    assert rl.num_requeues("a") == 0
    assert rl.when("a") == 0.005


def test_per_item_rate_limiter_has_no_overall_bucket() -> None:
    rl = per_item_rate_limiter()
    # 500 different failing items: no overall bucket slows the 500th down.
    assert max(rl.when(i) for i in range(500)) == 0.005


def test_default_rate_limiter_without_qps_is_per_item_only() -> None:
    rl = default_rate_limiter(qps=0)
    assert max(rl.when(i) for i in range(500)) == 0.005
    with pytest.raises(ValueError, match="negative"):
        default_rate_limiter(qps=-1)


async def test_bucket_allows_burst_then_spaces_at_qps() -> None:
    clock = FakeClock()
    rl = BucketRateLimiter(qps=10, burst=100, clock=clock)
    assert [rl.when(i) for i in range(100)] == [0.0] * 100
    assert rl.when("x") == pytest.approx(0.1)
    assert rl.when("y") == pytest.approx(0.2)
    await clock.advance(1.0)  # refills 10 tokens, 2 were owed
    assert rl.when("z") == 0.0
    assert rl.num_requeues("z") == 0


async def test_default_limiter_is_max_of_exponential_and_bucket() -> None:
    clock = FakeClock()
    rl = default_rate_limiter(clock=clock)
    delays = [rl.when(i) for i in range(101)]
    assert delays[:100] == [0.005] * 100  # the exponential's first step dominates the burst
    assert delays[100] == pytest.approx(0.1)  # the 101st add waits for the bucket
    assert rl.num_requeues(0) == 1
    rl.forget(0)
    assert rl.num_requeues(0) == 0


def test_max_of_asks_every_limiter() -> None:
    a, b = ItemFastSlowRateLimiter(1, 10, 1), ItemExponentialFailureRateLimiter()
    rl = MaxOfRateLimiter(a, b)
    assert rl.when("k") == 1
    assert rl.when("k") == 10
    assert a.num_requeues("k") == 2 and b.num_requeues("k") == 2


def test_bad_limiter_settings_are_rejected_clearly() -> None:
    with pytest.raises(ValueError, match="positive"):
        ItemExponentialFailureRateLimiter(0, 10)
    with pytest.raises(ValueError, match="burst"):
        BucketRateLimiter(10, 0)
    with pytest.raises(ValueError, match="at least one"):
        MaxOfRateLimiter()


async def test_queue_uses_the_configured_limiter() -> None:
    clock = FakeClock()
    q: RateLimitingQueue[str] = RateLimitingQueue(
        rate_limiter=ItemFastSlowRateLimiter(1.0, 60.0, 1), clock=clock
    )
    q.add_rate_limited("a")
    await clock.advance(1.0)
    q.done(await q.get())
    q.add_rate_limited("a")
    await clock.advance(59.0)
    assert len(q) == 0
    await clock.advance(1.0)
    assert len(q) == 1


async def _retry_times(
    limiter: RateLimiter | None, clock: FakeClock, items: int, seconds: float
) -> list[float]:
    """Times of every attempt when ``items`` items fail on every attempt, for ``seconds``."""
    q: RateLimitingQueue[int] = RateLimitingQueue(rate_limiter=limiter, clock=clock)
    for i in range(items):
        q.add(i)
    attempts: list[float] = []

    async def fail_everything_ready() -> None:
        while len(q):
            item = await q.get()
            attempts.append(clock.now())
            q.add_rate_limited(item)  # the attempt failed
            q.done(item)

    await fail_everything_ready()
    for _ in range(int(seconds * 10)):
        await clock.advance(0.1)
        await fail_everything_ready()
    q.shutdown()
    return attempts


async def test_default_queue_limiter_bounds_the_total_retry_rate_of_200_failing_items() -> None:
    """200 items failing on every attempt: after the burst, at most 10 retries a second in total."""
    clock = FakeClock()
    start = clock.now()
    attempts = await _retry_times(None, clock, 200, 60.0)
    # The burst: 200 first tries, then the bucket's 100 tokens at 5 ms; 10/s after that.
    after_burst = [t for t in attempts if t >= start + 1.0]
    assert len(after_burst) > 400  # it kept retrying all minute
    assert len(after_burst) / 59.0 <= 10.0
    # Per-item back-off alone lets the total grow with the number of failing items.
    clock2 = FakeClock()
    start2 = clock2.now()
    alone = [t for t in await _retry_times(per_item_rate_limiter(), clock2, 200, 60.0) if t >= start2 + 1.0]
    assert len(alone) / 59.0 > 10.0
