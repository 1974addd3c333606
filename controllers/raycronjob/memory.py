"""What the RayCronJob controller remembers, per RayCronJob: warnings given, and its own writes.

KubeRay repeats the invalid-spec and suspended events on every reconcile
(docs/reference/rayjob.md §10.11); we emit each once per ``metadata.generation``. The status
written last stands in for the cached object while the cache still shows one we wrote over, so a
replay of missed ticks never starts again from a stale ``lastScheduleTime``. :meth:`Memory.forget`
drops both when the object leaves the cache.
"""

from __future__ import annotations

from dataclasses import dataclass

from kuberay_py.objects import Obj

__all__ = ["CronMemo", "Memory"]


@dataclass
class CronMemo:
    uid: str
    # (versions our writes replaced, RayCronJob written last): read instead of the cache until the
    # cache moves on (controllers.common.last_write).
    written: tuple[frozenset[str], Obj] | None = None


class Memory:
    def __init__(self) -> None:
        self._told: dict[str, tuple[str, int]] = {}  # key -> (reason, generation) already announced
        self._memos: dict[str, CronMemo] = {}

    def memo(self, key: str, uid: str) -> CronMemo:
        """The RayCronJob's memo, new when the object under ``key`` was recreated (another uid)."""
        memo = self._memos.get(key)
        if memo is None or memo.uid != uid:
            memo = self._memos[key] = CronMemo(uid)
        return memo

    def first_time(self, key: str, reason: str, generation: int) -> bool:
        if self._told.get(key) == (reason, generation):
            return False
        self._told[key] = (reason, generation)
        return True

    def clear(self, key: str) -> None:
        self._told.pop(key, None)

    def forget(self, key: str) -> None:
        self._told.pop(key, None)
        self._memos.pop(key, None)
