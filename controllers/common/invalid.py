"""What a controller writes about an invalid object, per kind, as KubeRay writes it.

Every controller validates its object on each reconcile and, on failure, emits one Warning and
records the problem in the status. KubeRay v1.7.0 frames the same error differently per kind
(``*_controller.go``): the RayCluster controller's event reads ``The RayCluster spec is invalid
NS/NAME: ERR`` (``metadata``, and ``status`` with a comma, likewise; ``UpgradeStrategy`` for the
upgrade options), the RayJob, RayService and RayCronJob controllers' read ``NS/NAME: ERR``; the
status text (RayJob ``status.message``, RayService's ``Ready`` condition message) is ``ERR``
alone. :func:`invalid_report` is that one rule.

``ERR`` is the validators' messages, which carry KubeRay's texts (``utils/validation.go``): as
they are for RayCluster, RayJob and RayCronJob, and behind ``The RayService spec is invalid: ``
(or ``metadata``) for RayService, whose validators KubeRay wraps so. KubeRay stops at the first
problem; ours lists every one (docs/differences.md), joined by a newline as Go's
``errors.Join`` joins several errors.

The event reason says which kind of check failed, taken from the first error (validators list
metadata errors first): ``Invalid<Kind><Category>``. KubeRay defines only some of the reasons per
kind (RayService has no ``...Status``, RayCronJob only ``InvalidRayCronJobSpec``:
``utils/constant.go``); any other category reports as ``Spec``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from controllers import constants as C
from controllers.api.errors import Category, FieldError
from kuberay_py.objects import Obj

__all__ = ["InvalidReport", "invalid_reason", "invalid_report"]

_WORD: dict[Category, str] = {"metadata": "Metadata", "spec": "Spec", "status": "Status"}
_ALL: tuple[Category, ...] = ("metadata", "spec", "status")
# The reasons each kind's controller defines (KubeRay's utils/constant.go).
_CATEGORIES: dict[str, tuple[Category, ...]] = {
    C.CRD_RAYCLUSTER: _ALL,
    C.CRD_RAYJOB: _ALL,
    C.CRD_RAYSERVICE: ("metadata", "spec"),
    C.CRD_RAYCRONJOB: ("spec",),
}
_UPGRADE_STRATEGY = "spec.upgradeStrategy"


@dataclass(frozen=True)
class InvalidReport:
    reason: str  # the Warning event's reason
    event: str  # the Warning event's message
    message: str  # the status text: KubeRay's error, without the object's name


def invalid_reason(kind: str, errors: Sequence[FieldError]) -> str:
    categories = _CATEGORIES.get(kind, _ALL)
    category = errors[0].category if errors else "spec"
    return f"Invalid{kind}{_WORD[category if category in categories else 'spec']}"


def invalid_report(kind: str, obj: Obj, errors: Sequence[FieldError]) -> InvalidReport:
    """The event reason, event message and status text for ``obj`` (of ``kind``) with ``errors``."""
    reason = invalid_reason(kind, errors)
    message = "\n".join(_error_text(kind, e) for e in errors)
    ref = f"{obj['metadata'].get('namespace', '')}/{obj['metadata'].get('name', '')}"
    if kind != C.CRD_RAYCLUSTER:
        return InvalidReport(reason, f"{ref}: {message}", message)
    first = errors[0] if errors else FieldError("spec", "")
    if first.path.startswith(_UPGRADE_STRATEGY):
        event = f"The RayCluster UpgradeStrategy is invalid {ref}: {message}"
    elif reason.endswith("Status"):
        event = f"The RayCluster status is invalid {ref}, {message}"
    else:
        event = f"The RayCluster {first.category} is invalid {ref}: {message}"
    return InvalidReport(reason, event, message)


def _error_text(kind: str, error: FieldError) -> str:
    if kind != C.CRD_RAYSERVICE:
        return error.message
    category = "metadata" if error.category == "metadata" else "spec"
    return f"The RayService {category} is invalid: {error.message}"
