"""What the RayJob controller remembers between reconciles, per RayJob, in one place.

An optimisation over the cache, never the truth: after an operator restart the first reconcile
reads everything again from the cache and the dashboard. :meth:`Memory.forget` drops it all when
the RayJob leaves the cache.
"""

from __future__ import annotations

from dataclasses import dataclass

from controllers.common.memos import Memos
from controllers.rayjob.metrics import forget_job
from kuberay_py.objects import Obj

__all__ = ["JobMemo", "Memory"]


@dataclass
class JobMemo:
    uid: str
    # (resourceVersion we wrote over, object the API returned): our latest write of the RayJob,
    # read instead of the cache until the watch catches up (status writes do not wake us).
    written: tuple[frozenset[str], Obj] | None = None
    # Adaptive dashboard polling: the current interval and the Ray status it was computed for.
    poll_interval: float = 0.0
    polled_status: str = ""
    # Dashboard requests sent for this job (the benchmark reads the sum).
    polls: int = 0
    # The head's Ray token, by head Pod UID (a Secret read once per head).
    token: tuple[str, str | None] | None = None


class Memory:
    def __init__(self) -> None:
        self.memos: Memos[JobMemo] = Memos(JobMemo)

    def forget(self, key: str) -> None:
        """The RayJob ``key`` is gone: drop everything remembered about it, and its gauges."""
        self.memos.forget(key)
        namespace, name = key.split("/", 1)
        forget_job(namespace, name)

    def total_polls(self) -> int:
        return sum(m.polls for m in self.memos)

    def polls(self, key: str) -> int:
        memo = self.memos.peek(key)
        return memo.polls if memo is not None else 0
