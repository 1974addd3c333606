"""Our last write of an object, read instead of the cache until the cache catches up.

A controller's status write (or finalizer update) returns the new object at once; the watch
delivers it to the cache a moment later. A reconcile in between would read the version our
write replaced and act on it: rewrite the status (a 409), or, for a RayService, create a second
pending cluster. So each controller's memo keeps ``(resourceVersion replaced, object written)``,
and :func:`latest` hands out the written object while the cache still shows a version it
replaced. Writes in one reconcile chain (a finalizer update, then the status): the memo then
holds every version the chain replaced, since the cache may show any of them. Any other version
(the watch caught up, or someone else wrote) ends the memo: the cache is then at least as new as
our write.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from controllers.common.memos import HasUid, Memos
from controllers.common.objects import managed_here, spec_of
from kuberay_py.controller import Request
from kuberay_py.log import get_logger
from kuberay_py.objects import Obj

__all__ = ["KeepsMemos", "ObjectMemo", "RemembersWrite", "latest", "load", "remember_write"]


class RemembersWrite(Protocol):
    """A controller memo with a slot for its last write: ``(replaced resourceVersions, written)``."""

    written: tuple[frozenset[str], Obj] | None


class ObjectMemo(RemembersWrite, HasUid, Protocol):
    """A memo of one incarnation of an object (its UID) that remembers our last write of it."""


M = TypeVar("M", bound=ObjectMemo)

log = get_logger(__name__)


class KeepsMemos(Protocol[M]):
    """A controller's ``Memory``: its per-object memos, and what it drops when an object goes."""

    @property
    def memos(self) -> Memos[M]: ...

    def forget(self, key: str) -> None: ...


def load(cached: Obj | None, request: Request, memory: KeepsMemos[M]) -> tuple[Obj, M] | None:
    """The object a reconcile starts from and its memo; None when there is nothing to do: it left
    the cache (``cached`` is None; ``memory`` then forgets it), or ``spec.managedBy`` hands it to
    another controller (e.g. MultiKueue), which every controller then leaves alone, status
    included.

    The object is ``cached`` or our own newer write of it while the watch lags behind. The caller
    reads the cache itself, with its own Resource, so the RBAC scan sees which informer it reads.
    """
    key = f"{request.namespace}/{request.name}"
    if cached is None:
        memory.forget(key)
        return None
    memo = memory.memos.get(key, str(cached["metadata"].get("uid") or ""))
    obj = latest(memo, cached)
    if not managed_here(obj):
        log.debug("managed by another controller", key=key, managed_by=spec_of(obj).get("managedBy"))
        return None
    return obj, memo


def latest(memo: RemembersWrite, cached: Obj) -> Obj:
    """The cached object, or our own newer write of it while the watch lags behind."""
    if memo.written is None:
        return cached
    replaced, obj = memo.written
    if cached["metadata"].get("resourceVersion") in replaced:
        return obj
    memo.written = None  # the cache moved on (our write or someone else's)
    return cached


def remember_write(memo: RemembersWrite, over: Obj, written: Obj) -> None:
    """``written`` (as the API returned it) replaced ``over``: read it until the cache moves on."""
    over_rv = str(over["metadata"].get("resourceVersion", ""))
    replaced = frozenset({over_rv})
    if memo.written is not None and memo.written[1]["metadata"].get("resourceVersion") == over_rv:
        replaced |= memo.written[0]  # over our own write the cache has not shown yet
    memo.written = (replaced, written)
