"""What a reconciler receives and returns (controller-runtime's ``pkg/reconcile``).

A :class:`Request` names an object and nothing more: the reconciler always reads the current state
from the cache, which is what makes reconciles level-triggered and lets the queue merge events.

The :class:`Result` contract, applied by the controller after each reconcile:

* the reconcile raised → logged with its traceback, counted as an error, requeued *rate-limited*;
  a ``requeue_after`` cannot be returned together with an exception, which matches
  controller-runtime ignoring ``RequeueAfter`` when an error is returned (KubeRay returns
  ``RequeueAfter: 2s`` with errors and relies on the back-off instead);
* :class:`TerminalError` → logged and counted, but *not* requeued (retrying cannot help);
* ``requeue_after > 0`` → the failure count is forgotten and the key comes back after that delay;
* ``requeue=True`` → rate-limited requeue (deprecated upstream; prefer ``requeue_after``);
* otherwise → success, the failure count is forgotten.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["Reconciler", "Request", "Result", "TerminalError"]


@dataclass(frozen=True, slots=True)
class Request:
    """The key of one object to reconcile. ``namespace`` is ``""`` for cluster-scoped objects."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def for_object(cls, obj: dict[str, object]) -> Request:
        """The request for an API object (a dict with ``metadata.namespace``/``metadata.name``)."""
        meta = obj.get("metadata")
        if not isinstance(meta, dict) or not meta.get("name"):
            raise ValueError(f"object has no metadata.name: {str(obj)[:200]}")
        return cls(str(meta.get("namespace") or ""), str(meta["name"]))


@dataclass(frozen=True, slots=True)
class Result:
    """``requeue_after`` in seconds; ``requeue`` asks for a rate-limited requeue."""

    requeue_after: float | None = None
    requeue: bool = False


class TerminalError(Exception):
    """A reconcile failure that retrying cannot fix (bad spec): reported, never requeued."""


@runtime_checkable
class Reconciler(Protocol):
    async def reconcile(self, request: Request) -> Result: ...
