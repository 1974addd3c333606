"""Exponential back-off with jitter for list/watch retries (client-go's reflector defaults).

client-go backs a failing reflector off 800 ms, doubling with jitter factor 1.0, to a 30 s cap,
and forgets the history once the connection is healthy again. Jitter matters at scale: after an
API server restart every informer of every operator reconnects, and without it they all retry
in lock-step. Time and randomness are injected so tests can assert exact schedules.
"""

from __future__ import annotations

import random

from kuberay_py.clock import Clock, RealClock

__all__ = ["Backoff"]


class Backoff:
    """``next_delay()`` grows ``initial * factor**n`` with ``+[0, jitter)`` fraction, capped at ``cap``."""

    def __init__(
        self,
        *,
        initial: float = 0.8,
        cap: float = 30.0,
        factor: float = 2.0,
        jitter: float = 1.0,
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.initial = initial
        self.cap = cap
        self.factor = factor
        self.jitter = jitter
        self._clock = clock or RealClock()
        self._rng = rng or random.Random()
        self._base = initial
        self.failures = 0

    def reset(self) -> None:
        self._base = self.initial
        self.failures = 0

    def next_delay(self) -> float:
        base = self._base
        self._base = min(self.cap, self._base * self.factor)
        self.failures += 1
        return min(self.cap, base * (1.0 + self.jitter * self._rng.random()))

    async def wait(self, at_least: float = 0.0) -> float:
        """Sleep the next delay (or ``at_least``, e.g. a server's Retry-After); returns the delay."""
        delay = max(self.next_delay(), at_least)
        await self._clock.sleep(delay)
        return delay
