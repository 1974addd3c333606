"""The Warning event reason for an invalid object, as KubeRay names it: ``Invalid<Kind><Category>``.

Every controller validates its object on each reconcile and, on failure, emits one Warning whose
reason says which kind of check failed, taken from the first error (validators list metadata
errors first). KubeRay defines only some of the reasons per kind (RayService has no
``...Status``, RayCronJob only ``InvalidRayCronJobSpec``: ``utils/constant.go``); ``categories``
lists the ones the kind has, any other category reports as ``Spec``.
"""

from __future__ import annotations

from collections.abc import Sequence

from controllers.api.errors import Category, FieldError

__all__ = ["invalid_reason"]

_WORD: dict[Category, str] = {"metadata": "Metadata", "spec": "Spec", "status": "Status"}


def invalid_reason(
    kind: str, errors: Sequence[FieldError], categories: Sequence[Category] = ("metadata", "spec", "status")
) -> str:
    category = errors[0].category if errors else "spec"
    return f"Invalid{kind}{_WORD[category if category in categories else 'spec']}"
