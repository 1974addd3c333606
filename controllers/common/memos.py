"""Per-object memos keyed by ``namespace/name``, one job for every controller's memory.

Each controller remembers a few things per object between reconciles (its last write, known
children, warnings given). They belong to one *incarnation* of the object: a RayJob deleted and
created again under the same name has a new UID and must not inherit the old one's memo. Each
controller's ``Memory`` composes a :class:`Memos` of its own memo type; ``forget`` is called when
the object leaves the cache, so nothing grows with objects that no longer exist.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, Protocol, TypeVar

__all__ = ["HasUid", "Memos"]


class HasUid(Protocol):
    @property
    def uid(self) -> str: ...


M = TypeVar("M", bound=HasUid)


class Memos(Generic[M]):
    def __init__(self, new: Callable[[str], M]) -> None:
        self._new = new  # a fresh memo for a UID
        self._memos: dict[str, M] = {}

    def get(self, key: str, uid: str = "") -> M:
        """The memo of ``key``; a fresh one when the object under ``key`` has another UID."""
        memo = self._memos.get(key)
        if memo is None or memo.uid != uid:
            memo = self._memos[key] = self._new(uid)
        return memo

    def peek(self, key: str) -> M | None:
        """The memo of ``key`` if one is kept, without creating one."""
        return self._memos.get(key)

    def forget(self, key: str) -> None:
        self._memos.pop(key, None)

    def __iter__(self) -> Iterator[M]:
        return iter(list(self._memos.values()))

    def __contains__(self, key: object) -> bool:
        return key in self._memos

    def __len__(self) -> int:
        return len(self._memos)
