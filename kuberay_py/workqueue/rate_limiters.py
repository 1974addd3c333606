"""How long a failing item waits before its next attempt (client-go's ``default_rate_limiters.go``).

A rate limiter answers three questions about an item: how long it must wait now (``when``, which
also records the failure), how many times it has failed in a row (``num_requeues``) and "it
succeeded, start over" (``forget``). The queue calls ``when`` from ``add_rate_limited``.

Two defaults exist upstream and both are offered:

* :func:`default_rate_limiter` (the default of every queue and controller) — the max of a per-item
  exponential back-off 5 ms → 1000 s and an overall 10 qps / burst 100 token bucket (client-go's
  ``DefaultTypedControllerRateLimiter``). The bucket is shared by all items of one queue, so N
  objects failing persistently cost at most 10 retries per second once the burst is spent,
  whatever N is. Both halves are configurable (``qps=0`` drops the bucket).
* :func:`per_item_rate_limiter` — the per-item back-off alone. controller-runtime ≥ v0.23 uses it
  with its priority queue, so KubeRay (controller-runtime v0.24.1) runs on it; there the retry
  rate grows with the number of failing objects (200 RayClusters whose Pod creates all got 403
  cost ~65 requests per second). Offered for exact KubeRay behaviour; see ``docs/differences.md``.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol, runtime_checkable

from kuberay_py.clock import Clock, RealClock

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "default_rate_limiter",
    "per_item_rate_limiter",
]


@runtime_checkable
class RateLimiter(Protocol):
    def when(self, item: Hashable) -> float:
        """Seconds the item must wait; records one more failure for it."""
        ...

    def forget(self, item: Hashable) -> None: ...

    def num_requeues(self, item: Hashable) -> int: ...


class ItemExponentialFailureRateLimiter:
    """``base * 2**failures``, capped at ``max_delay``: 5 ms, 10 ms, 20 ms … 655 s, then 1000 s."""

    def __init__(self, base: float = 0.005, max_delay: float = 1000.0) -> None:
        if base <= 0 or max_delay <= 0:
            raise ValueError(f"base ({base}) and max_delay ({max_delay}) must be positive")
        self.base = base
        self.max_delay = max_delay
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        exp = self._failures.get(item, 0)
        self._failures[item] = exp + 1
        if exp >= 1000:  # 2.0**1024 overflows a float; the cap applies long before that anyway
            return self.max_delay
        return min(self.base * (2.0**exp), self.max_delay)

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter:
    """An overall token bucket (golang.org/x/time/rate ``Reserve().Delay()``): shared by all items.

    Tokens refill at ``qps`` up to ``burst``; each ``when`` takes one, and the count may go
    negative, in which case the caller waits until it would be back at zero. ``forget`` and
    ``num_requeues`` are no-ops because the bucket does not track items.
    """

    def __init__(self, qps: float = 10.0, burst: int = 100, *, clock: Clock | None = None) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"qps ({qps}) must be positive and burst ({burst}) at least 1")
        self.qps = qps
        self.burst = burst
        self._clock = clock or RealClock()
        self._tokens = float(burst)
        self._last = self._clock.now()

    def when(self, item: Hashable) -> float:
        now = self._clock.now()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, item: Hashable) -> None:
        return None

    def num_requeues(self, item: Hashable) -> int:
        return 0


class ItemFastSlowRateLimiter:
    """``fast`` delay for the first ``max_fast_attempts`` failures of an item, ``slow`` after."""

    def __init__(self, fast: float, slow: float, max_fast_attempts: int) -> None:
        if fast < 0 or slow < 0 or max_fast_attempts < 0:
            raise ValueError("fast, slow and max_fast_attempts must not be negative")
        self.fast = fast
        self.slow = slow
        self.max_fast_attempts = max_fast_attempts
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        n = self._failures.get(item, 0) + 1
        self._failures[item] = n
        return self.fast if n <= self.max_fast_attempts else self.slow

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class MaxOfRateLimiter:
    """The longest delay of several limiters. Every limiter is asked, so a bucket is always charged."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        return max(limiter.when(item) for limiter in self.limiters)

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def per_item_rate_limiter(base: float = 0.005, max_delay: float = 1000.0) -> RateLimiter:
    """controller-runtime's priority-queue default (what KubeRay runs on): per-item 5 ms → 1000 s."""
    return ItemExponentialFailureRateLimiter(base, max_delay)


def default_rate_limiter(
    *,
    clock: Clock | None = None,
    qps: float = 10.0,
    burst: int = 100,
    base: float = 0.005,
    max_delay: float = 1000.0,
) -> RateLimiter:
    """client-go's ``DefaultTypedControllerRateLimiter``: max(per-item 5 ms → 1000 s, bucket 10 qps/100).

    ``qps=0`` means no overall bucket (:func:`per_item_rate_limiter`). ``clock`` drives the
    bucket's refill; pass the queue's clock so a FakeClock controls it too.
    """
    if qps < 0:
        raise ValueError(f"qps must not be negative, got {qps}")
    per_item = per_item_rate_limiter(base, max_delay)
    if qps == 0:
        return per_item
    return MaxOfRateLimiter(per_item, BucketRateLimiter(qps, burst, clock=clock))
