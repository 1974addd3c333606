"""What the RayCronJob controller remembers, per RayCronJob: which warnings it already gave.

KubeRay repeats the invalid-spec and suspended events on every reconcile (§10.11); we emit each
once per ``metadata.generation``. :meth:`Memory.forget` drops it when the object leaves the cache.
"""

from __future__ import annotations

__all__ = ["Memory"]


class Memory:
    def __init__(self) -> None:
        self._told: dict[str, tuple[str, int]] = {}  # key -> (reason, generation) already announced

    def first_time(self, key: str, reason: str, generation: int) -> bool:
        if self._told.get(key) == (reason, generation):
            return False
        self._told[key] = (reason, generation)
        return True

    def clear(self, key: str) -> None:
        self._told.pop(key, None)

    def forget(self, key: str) -> None:
        self._told.pop(key, None)
