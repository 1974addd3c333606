"""Apache YuniKorn (``--batch-scheduler=yunikorn``): labels and annotations only, no CRD.

YuniKorn reads its application id and queue from Pod labels (``applicationId``, ``queue``), which
KubeRay v1.7.0 copies from the RayCluster / RayJob labels ``yunikorn.apache.org/app-id`` and
``yunikorn.apache.org/queue``. With ``ray.io/gang-scheduling-enabled`` on the parent, every child
also carries the task groups (the parent's own ``yunikorn.apache.org/task-groups`` annotation if
it has one, otherwise computed: head, each worker group at its minimum, a RayJob's submitter) and
each Pod its task group name.
"""

from __future__ import annotations

import json
from typing import Any

from controllers.batchscheduler import resources as R
from controllers.batchscheduler.base import (
    Scheduler,
    SubmitterPodSpec,
    copy_label,
    set_annotation,
    set_scheduler_name,
)
from kuberay_py.log import get_logger
from kuberay_py.objects import Obj

__all__ = [
    "APP_ID_LABEL",
    "QUEUE_LABEL",
    "TASK_GROUPS_ANNOTATION",
    "TASK_GROUP_NAME_ANNOTATION",
    "YuniKorn",
    "task_groups",
]

log = get_logger("controllers.batchscheduler.yunikorn")

APP_ID_LABEL = "yunikorn.apache.org/app-id"
QUEUE_LABEL = "yunikorn.apache.org/queue"
POD_APP_ID_LABEL = "applicationId"
POD_QUEUE_LABEL = "queue"
TASK_GROUP_NAME_ANNOTATION = "yunikorn.apache.org/task-group-name"
TASK_GROUPS_ANNOTATION = "yunikorn.apache.org/task-groups"
GANG_LABEL = "ray.io/gang-scheduling-enabled"


def _group(name: str, members: int, pod_spec: dict[str, Any]) -> dict[str, Any]:
    """One TaskGroup in the field order of KubeRay's Go struct (empty optional fields left out)."""
    out: dict[str, Any] = {"minResource": R.render(R.pod_resources(pod_spec))}
    if pod_spec.get("nodeSelector"):
        out["nodeSelector"] = dict(sorted(pod_spec["nodeSelector"].items()))
    if pod_spec.get("affinity"):
        out["affinity"] = pod_spec["affinity"]
    out["name"] = name
    if pod_spec.get("tolerations"):
        out["tolerations"] = pod_spec["tolerations"]
    out["minMember"] = members
    return out


def _spec_of(group: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = (group.get("template") or {}).get("spec") or {}
    return spec


def task_groups(parent: Obj, parent_kind: str, submitter_pod_spec: SubmitterPodSpec) -> list[dict[str, Any]]:
    spec = parent.get("spec") or {}
    cluster_spec = (spec.get("rayClusterSpec") or {}) if parent_kind == "RayJob" else spec
    groups = [_group("headgroup", 1, _spec_of(cluster_spec.get("headGroupSpec") or {}))]
    for worker in cluster_spec.get("workerGroupSpecs") or []:
        members = int(worker.get("minReplicas") or 0) * int(worker.get("numOfHosts") or 1)
        groups.append(_group(str(worker.get("groupName", "")), members, _spec_of(worker)))
    if parent_kind == "RayJob":
        groups.append(_group("submittergroup", 1, submitter_pod_spec(parent)))
    return groups


class YuniKorn(Scheduler):
    plugin = "yunikorn"
    name = "yunikorn"

    def __init__(self, submitter_pod_spec: SubmitterPodSpec) -> None:
        self._submitter_pod_spec = submitter_pod_spec

    def add_metadata(self, parent: Obj, parent_kind: str, child: Obj, group: str) -> None:
        copy_label(parent, child, APP_ID_LABEL, POD_APP_ID_LABEL)
        copy_label(parent, child, QUEUE_LABEL, POD_QUEUE_LABEL)
        set_scheduler_name(child, self.name)
        meta = parent.get("metadata") or {}
        if GANG_LABEL not in (meta.get("labels") or {}):
            return
        value = str((meta.get("annotations") or {}).get(TASK_GROUPS_ANNOTATION) or "")
        if not value:
            value = json.dumps(
                task_groups(parent, parent_kind, self._submitter_pod_spec), separators=(",", ":")
            )
        set_annotation(child, TASK_GROUPS_ANNOTATION, value)
        if group:
            set_annotation(child, TASK_GROUP_NAME_ANNOTATION, group)
