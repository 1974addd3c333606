"""Event filters (controller-runtime's ``pkg/predicate``), applied before an event is enqueued.

Each predicate answers, per event kind, "should this event cause a reconcile?". The "changed"
predicates only have an opinion about updates; creates, deletes and generic events pass, as in
controller-runtime. KubeRay filters its primary objects with
``or_(GenerationChanged(), LabelsChanged(), AnnotationsChanged())``: a status-only write (which
does not bump ``metadata.generation``) and a periodic resync (old == new) never trigger a
reconcile, while spec, label and annotation edits do.

Example::

    builder.for_(RAYCLUSTERS, predicates=[or_(GenerationChanged(), LabelsChanged())])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "AnnotationsChanged",
    "GenerationChanged",
    "LabelsChanged",
    "Predicate",
    "PredicateFuncs",
    "ResourceVersionChanged",
    "and_",
    "not_",
    "or_",
]

Obj = Mapping[str, Any]


def _meta(obj: Obj) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


class Predicate:
    """Lets every event through; subclasses override the event kinds they filter."""

    def create(self, obj: Obj) -> bool:
        return True

    def update(self, old: Obj, new: Obj) -> bool:
        return True

    def delete(self, obj: Obj) -> bool:
        return True

    def generic(self, obj: Obj) -> bool:
        return True


class GenerationChanged(Predicate):
    """Updates that changed ``metadata.generation`` (spec edits; not status writes)."""

    def update(self, old: Obj, new: Obj) -> bool:
        return _meta(old).get("generation") != _meta(new).get("generation")


class LabelsChanged(Predicate):
    def update(self, old: Obj, new: Obj) -> bool:
        return (_meta(old).get("labels") or {}) != (_meta(new).get("labels") or {})


class AnnotationsChanged(Predicate):
    def update(self, old: Obj, new: Obj) -> bool:
        return (_meta(old).get("annotations") or {}) != (_meta(new).get("annotations") or {})


class ResourceVersionChanged(Predicate):
    """Drops resync updates (same resourceVersion on both sides)."""

    def update(self, old: Obj, new: Obj) -> bool:
        return _meta(old).get("resourceVersion") != _meta(new).get("resourceVersion")


class PredicateFuncs(Predicate):
    """One object filter applied to every event kind (``predicate.NewPredicateFuncs``); updates test new."""

    def __init__(self, keep: Callable[[Obj], bool]) -> None:
        self._keep = keep

    def create(self, obj: Obj) -> bool:
        return self._keep(obj)

    def update(self, old: Obj, new: Obj) -> bool:
        return self._keep(new)

    def delete(self, obj: Obj) -> bool:
        return self._keep(obj)

    def generic(self, obj: Obj) -> bool:
        return self._keep(obj)


class _Or(Predicate):
    def __init__(self, preds: tuple[Predicate, ...]) -> None:
        self.preds = preds

    def create(self, obj: Obj) -> bool:
        return any(p.create(obj) for p in self.preds)

    def update(self, old: Obj, new: Obj) -> bool:
        return any(p.update(old, new) for p in self.preds)

    def delete(self, obj: Obj) -> bool:
        return any(p.delete(obj) for p in self.preds)

    def generic(self, obj: Obj) -> bool:
        return any(p.generic(obj) for p in self.preds)


class _And(_Or):
    def create(self, obj: Obj) -> bool:
        return all(p.create(obj) for p in self.preds)

    def update(self, old: Obj, new: Obj) -> bool:
        return all(p.update(old, new) for p in self.preds)

    def delete(self, obj: Obj) -> bool:
        return all(p.delete(obj) for p in self.preds)

    def generic(self, obj: Obj) -> bool:
        return all(p.generic(obj) for p in self.preds)


class _Not(Predicate):
    def __init__(self, pred: Predicate) -> None:
        self.pred = pred

    def create(self, obj: Obj) -> bool:
        return not self.pred.create(obj)

    def update(self, old: Obj, new: Obj) -> bool:
        return not self.pred.update(old, new)

    def delete(self, obj: Obj) -> bool:
        return not self.pred.delete(obj)

    def generic(self, obj: Obj) -> bool:
        return not self.pred.generic(obj)


def _check(preds: tuple[Predicate, ...], fn: str) -> tuple[Predicate, ...]:
    if not preds:
        raise ValueError(f"{fn}() needs at least one predicate")
    for p in preds:
        if not isinstance(p, Predicate):
            raise TypeError(f"{fn}() takes Predicate instances, got {p!r} (did you forget the ()?)")
    return preds


def or_(*preds: Predicate) -> Predicate:
    """Passes an event if any predicate does (controller-runtime's ``predicate.Or``)."""
    return _Or(_check(preds, "or_"))


def and_(*preds: Predicate) -> Predicate:
    """Passes an event only if every predicate does."""
    return _And(_check(preds, "and_"))


def not_(pred: Predicate) -> Predicate:
    return _Not(_check((pred,), "not_")[0])
