"""What the RayJob controller remembers between reconciles, per RayJob, in one place.

An optimisation over the cache, never the truth: after an operator restart the first reconcile
reads everything again from the cache and the dashboard. :meth:`Memory.forget` drops it all when
the RayJob leaves the cache.
"""

from __future__ import annotations

from dataclasses import dataclass

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
        self._memos: dict[str, JobMemo] = {}

    def memo(self, key: str, uid: str) -> JobMemo:
        memo = self._memos.get(key)
        if memo is None or memo.uid != uid:
            memo = self._memos[key] = JobMemo(uid)
        return memo

    def forget(self, key: str) -> None:
        """The RayJob ``key`` is gone: drop everything remembered about it."""
        self._memos.pop(key, None)

    def total_polls(self) -> int:
        return sum(m.polls for m in self._memos.values())

    def polls(self, key: str) -> int:
        memo = self._memos.get(key)
        return memo.polls if memo is not None else 0

    def __len__(self) -> int:
        return len(self._memos)
