"""When one reconcile asks to run again: at once, after the earliest delay, or on the next event.

Every phase of a reconcile may ask for a wake-up (a Serve poll, a deadline, a TTL); the reconcile
must then return the *earliest* of them, or the first phase to ask would silence the others. A
phase that changed what the next phase reads asks for ``immediately()`` instead. Delays are
seconds on the controller's injected clock (phases compute them from ``ctx.deps.clock``), so tests
step time and see the same requeues. The reconciler turns the timer into its ``Result`` once.
"""

from __future__ import annotations

from kuberay_py.controller import Result

__all__ = ["Requeue"]

_FLOOR = 0.001  # a zero delay would read as "no requeue"


class Requeue:
    def __init__(self) -> None:
        self.delay: float | None = None  # the earliest delay asked for; None: rely on watches
        self.now = False  # run again at once (rate-limited by the queue)

    def at(self, seconds: float) -> None:
        """Run again in ``seconds`` at the latest."""
        seconds = max(_FLOOR, seconds)
        self.delay = seconds if self.delay is None else min(self.delay, seconds)

    def immediately(self) -> None:
        self.now = True

    def result(self, default: float | None = None) -> Result:
        """The reconcile's answer; ``default`` is the period when no phase asked (a resync)."""
        if self.now:
            return Result(requeue=True)
        delay = self.delay if self.delay is not None else default
        return Result() if delay is None else Result(requeue_after=delay)
