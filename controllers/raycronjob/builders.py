"""The child RayJob of one RayCronJob tick (docs/reference/rayjob.md §7.2 step 5), a pure function."""

from __future__ import annotations

from datetime import UTC, datetime

from controllers import constants as C
from controllers.common.objects import controller_ref
from controllers.spechash import RAYJOB_SPEC_TYPE, go_round_trip
from kuberay_py.objects import Obj

__all__ = ["child_name", "child_rayjob"]


def child_name(cron_name: str, tick: datetime) -> str:
    """``<cron>-<minutes since the epoch>``: deterministic, so a repeated attempt hits AlreadyExists."""
    return f"{cron_name}-{int(tick.timestamp()) // 60}"


def child_rayjob(cron: Obj, tick: datetime) -> Obj:
    meta = cron["metadata"]
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {
            "name": child_name(meta["name"], tick),
            "namespace": meta["namespace"],
            "labels": {C.RAY_CRONJOB_NAME_LABEL_KEY: meta["name"]},
            "annotations": {
                C.RAY_CRONJOB_TIMESTAMP_ANNOTATION_KEY: tick.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            },
            "ownerReferences": [controller_ref(cron, "RayCronJob")],
        },
        # KubeRay creates the child from its Go types: the stored spec is the template's Go round
        # trip, so the child's finalizer write changes nothing and its generation stays 1.
        "spec": go_round_trip((cron.get("spec") or {}).get("jobTemplate") or {}, RAYJOB_SPEC_TYPE),
    }
