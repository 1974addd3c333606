"""Which changes of a controller's own object are worth a reconcile.

The RayService and RayJob controllers react to their object's spec (``generation``), labels,
annotations and the start of its deletion, and not to their own status writes (those would wake
them after every write, KubeRay's RayJob controller's 3 s churn). A deletion does not bump the
generation, hence its own clause.
"""

from __future__ import annotations

from kuberay_py.controller import (
    AnnotationsChanged,
    GenerationChanged,
    LabelsChanged,
    Predicate,
    PredicateFuncs,
    or_,
)

__all__ = ["spec_labels_annotations_or_deletion"]


def spec_labels_annotations_or_deletion() -> Predicate:
    return or_(
        GenerationChanged(),
        LabelsChanged(),
        AnnotationsChanged(),
        PredicateFuncs(lambda obj: bool((obj.get("metadata") or {}).get("deletionTimestamp"))),
    )
