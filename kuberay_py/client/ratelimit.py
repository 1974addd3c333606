"""Client-side QPS/burst throttling, as client-go's ``flowcontrol.NewTokenBucketRateLimiter``.

KubeRay runs with QPS 100 / burst 200: a burst of 200 requests goes out at once, then requests
are spaced at 10 ms. The bucket *reserves* a token before sleeping (like Go's ``rate.Limiter.Wait``),
so concurrent callers queue up in arrival order instead of all waking together and stampeding.
Time comes from an injectable :class:`~kuberay_py.clock.Clock` so tests can step through it.
"""

from __future__ import annotations

from kuberay_py.clock import Clock, RealClock

__all__ = ["TokenBucket"]


class TokenBucket:
    """``qps`` tokens per second, holding at most ``burst``; ``qps <= 0`` disables throttling."""

    def __init__(self, qps: float, burst: int, *, clock: Clock | None = None) -> None:
        if qps > 0 and burst < 1:
            raise ValueError(f"burst must be >= 1 when qps > 0 (got {burst})")
        self.qps = qps
        self.burst = burst
        self._clock = clock or RealClock()
        self._tokens = float(burst)
        self._last = self._clock.now()

    def _refill(self) -> None:
        now = self._clock.now()
        elapsed = now - self._last
        if elapsed > 0:
            self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)
        self._last = now

    def reserve(self) -> float:
        """Take one token now (possibly going into debt) and return how long to wait for it."""
        if self.qps <= 0:
            return 0.0
        self._refill()
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def try_accept(self) -> bool:
        """Take a token only if one is available right now."""
        if self.qps <= 0:
            return True
        self._refill()
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    async def acquire(self) -> float:
        """Wait for a token; returns the seconds spent waiting (for the rate-limiter metric)."""
        delay = self.reserve()
        if delay > 0:
            try:
                await self._clock.sleep(delay)
            except BaseException:
                # A cancelled waiter gives its reservation back so it does not slow the others.
                self._tokens = min(float(self.burst), self._tokens + 1.0)
                raise
        return delay
