"""What the RayCronJob controller remembers, per RayCronJob: what it announced, and its own writes.

KubeRay repeats the invalid-spec and suspended events on every reconcile
(docs/reference/rayjob.md §10.11); we emit each once per ``metadata.generation``. The status
written last stands in for the cached object while the cache still shows one we wrote over, so a
replay of missed ticks never starts again from a stale ``lastScheduleTime``. :meth:`Memory.forget`
drops both when the object leaves the cache.
"""

from __future__ import annotations

from dataclasses import dataclass

from controllers.common.memos import Memos
from kuberay_py.objects import Obj

__all__ = ["CronMemo", "Memory"]


@dataclass
class CronMemo:
    uid: str
    # (versions our writes replaced, RayCronJob written last): read instead of the cache until the
    # cache moves on (controllers.common.last_write).
    written: tuple[frozenset[str], Obj] | None = None
    told: tuple[str, int] | None = None  # (event reason, generation) announced last

    def first_time(self, reason: str, generation: int) -> bool:
        """Whether ``reason`` is news at ``generation`` (and remember that it is no longer)."""
        if self.told == (reason, generation):
            return False
        self.told = (reason, generation)
        return True


class Memory:
    def __init__(self) -> None:
        self.memos: Memos[CronMemo] = Memos(CronMemo)

    def forget(self, key: str) -> None:
        self.memos.forget(key)
