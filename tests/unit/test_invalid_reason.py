"""The kit's report of an invalid object: KubeRay's ``Invalid<Kind><Category>`` reasons, and each
kind's event and status text as KubeRay v1.7.0's controllers write them."""

from __future__ import annotations

from controllers.api.errors import FieldError
from controllers.common.invalid import invalid_reason, invalid_report

META = FieldError("metadata.name", "too long", "metadata")
SPEC = FieldError("spec.x", "bad")
STATUS = FieldError("status.y", "bad", "status")
OBJ = {"metadata": {"namespace": "ns", "name": "o"}}


def test_the_first_error_names_the_reason() -> None:
    assert invalid_reason("RayCluster", [META, SPEC]) == "InvalidRayClusterMetadata"
    assert invalid_reason("RayJob", [SPEC, META]) == "InvalidRayJobSpec"
    assert invalid_reason("RayCluster", [STATUS]) == "InvalidRayClusterStatus"


def test_a_category_the_kind_has_no_reason_for_reports_as_spec() -> None:
    assert invalid_reason("RayService", [STATUS]) == "InvalidRayServiceSpec"
    assert invalid_reason("RayCronJob", [META, SPEC]) == "InvalidRayCronJobSpec"


def test_a_raycluster_event_says_what_is_invalid_and_the_status_only_the_error() -> None:
    report = invalid_report("RayCluster", OBJ, [SPEC])
    assert report.event == "The RayCluster spec is invalid ns/o: bad" and report.message == "bad"
    assert (
        invalid_report("RayCluster", OBJ, [META]).event == "The RayCluster metadata is invalid ns/o: too long"
    )
    assert invalid_report("RayCluster", OBJ, [STATUS]).event == "The RayCluster status is invalid ns/o, bad"
    upgrade = FieldError("spec.upgradeStrategy.type", "value X is invalid")
    assert invalid_report("RayCluster", OBJ, [upgrade]).event == (
        "The RayCluster UpgradeStrategy is invalid ns/o: value X is invalid"
    )


def test_the_other_kinds_prefix_the_event_with_the_object_and_join_errors_by_newline() -> None:
    for kind in ("RayJob", "RayCronJob"):
        report = invalid_report(kind, OBJ, [SPEC, FieldError("spec.z", "worse")])
        assert report.reason == f"Invalid{kind}Spec"
        assert (report.event, report.message) == ("ns/o: bad\nworse", "bad\nworse")


def test_a_rayservice_error_says_which_part_is_invalid_as_kuberay_wraps_it() -> None:
    report = invalid_report("RayService", OBJ, [META, SPEC])
    assert report.reason == "InvalidRayServiceMetadata"
    text = "The RayService metadata is invalid: too long\nThe RayService spec is invalid: bad"
    assert (report.message, report.event) == (text, f"ns/o: {text}")
