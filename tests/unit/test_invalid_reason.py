"""The kit's event reason for an invalid object: KubeRay's ``Invalid<Kind><Category>`` names."""

from __future__ import annotations

from controllers.api.errors import FieldError
from controllers.common.invalid import invalid_reason

META = FieldError("metadata.name", "too long", "metadata")
SPEC = FieldError("spec.x", "bad")
STATUS = FieldError("status.y", "bad", "status")


def test_the_first_error_names_the_reason() -> None:
    assert invalid_reason("RayCluster", [META, SPEC]) == "InvalidRayClusterMetadata"
    assert invalid_reason("RayJob", [SPEC, META]) == "InvalidRayJobSpec"
    assert invalid_reason("RayCluster", [STATUS]) == "InvalidRayClusterStatus"


def test_a_category_the_kind_has_no_reason_for_reports_as_spec() -> None:
    assert invalid_reason("RayService", [STATUS], ("metadata", "spec")) == "InvalidRayServiceSpec"
    assert invalid_reason("RayCronJob", [META, SPEC], ("spec",)) == "InvalidRayCronJobSpec"
