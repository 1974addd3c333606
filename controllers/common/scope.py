"""What one reconcile works with: the reconciler's dependencies, and the object's identity.

Every controller's reconciler is built with the same collaborators (an API client, a cache
reader, an event recorder, a clock, its options) and hands them, unchanged, to the context of
each reconcile; and every context names the object it reconciles the same way. Both live here,
once, and each controller's context holds them (``ctx.deps.client``, ``ctx.ref.key``) next to
what is its own (the object, its memo, a working status).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from controllers.common.cache import CacheReader
from controllers.common.events import Recorder
from kuberay_py.client import Client
from kuberay_py.clock import Clock
from kuberay_py.objects import Obj

if TYPE_CHECKING:
    from kuberay_py.manager.manager import Manager

__all__ = ["Deps", "Ref", "deps_from"]

OptionsT = TypeVar("OptionsT")


@dataclass(frozen=True)
class Deps(Generic[OptionsT]):
    """A reconciler's collaborators; frozen, as one reconcile must not swap them for the next."""

    client: Client
    cache: CacheReader
    recorder: Recorder
    clock: Clock  # the injected clock: every delay and timestamp of a reconcile comes from it
    options: OptionsT


@dataclass(frozen=True)
class Ref:
    """The namespaced object a reconcile is about; fixed for the reconcile even as the object is
    rewritten (its name and namespace cannot change)."""

    namespace: str
    name: str

    @property
    def key(self) -> str:
        """``namespace/name``: the key of the object in the queue, the cache and the memories."""
        return f"{self.namespace}/{self.name}"

    @classmethod
    def of(cls, obj: Obj) -> Ref:
        meta = obj["metadata"]
        return cls(str(meta["namespace"]), str(meta["name"]))


def deps_from(
    manager: Manager, event_source: str, options: OptionsT, *, clock: Clock | None = None
) -> Deps[OptionsT]:
    """A controller's dependencies as its ``setup`` wires them: the manager's client and cache, an
    event recorder whose Events name ``event_source``, and the manager's clock unless ``clock``
    (a test's) is injected."""
    recorder = manager.event_recorder(event_source)
    return Deps(manager.client, manager.cache, recorder, clock or manager.clock, options)
