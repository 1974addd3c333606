"""What the RayCronJob controller remembers, per RayCronJob: warnings given, and its own writes.

KubeRay repeats the invalid-spec and suspended events on every reconcile
(docs/reference/rayjob.md §10.11); we emit each once per ``metadata.generation``. The status
written last stands in for the cached object while the cache still shows one we wrote over, so a
replay of missed ticks never starts again from a stale ``lastScheduleTime``. :meth:`Memory.forget`
drops both when the object leaves the cache.
"""

from __future__ import annotations

from kuberay_py.objects import Obj

__all__ = ["Memory"]


class Memory:
    def __init__(self) -> None:
        self._told: dict[str, tuple[str, int]] = {}  # key -> (reason, generation) already announced
        self._written: dict[str, tuple[set[str], Obj]] = {}  # key -> (versions written over, latest)

    def first_time(self, key: str, reason: str, generation: int) -> bool:
        if self._told.get(key) == (reason, generation):
            return False
        self._told[key] = (reason, generation)
        return True

    def clear(self, key: str) -> None:
        self._told.pop(key, None)

    def wrote(self, key: str, over: Obj, written: Obj) -> None:
        """``written`` replaced ``over``: until the cache moves past both, read ``written``."""
        stale, _ = self._written.get(key, (set(), written))
        stale.add(str(over["metadata"].get("resourceVersion")))
        self._written[key] = (stale, written)

    def latest(self, key: str, cached: Obj) -> Obj:
        """``cached``, or our last write when the cache shows a version that write replaced."""
        remembered = self._written.get(key)
        if remembered is None:
            return cached
        stale, written = remembered
        same_object = written["metadata"].get("uid") == cached["metadata"].get("uid")
        if same_object and str(cached["metadata"].get("resourceVersion")) in stale:
            return written
        del self._written[key]
        return cached

    def forget(self, key: str) -> None:
        self._told.pop(key, None)
        self._written.pop(key, None)
