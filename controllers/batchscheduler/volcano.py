"""Volcano (``--batch-scheduler=volcano``, or the legacy ``--enable-batch-scheduler``).

One ``scheduling.volcano.sh/v1beta1`` PodGroup ``ray-<name>-pg`` per RayCluster, or per RayJob
for a RayJob's cluster (its Pods then point at the RayJob's PodGroup), sized as KubeRay v1.7.0's
``calculatePodGroupParams``: the head plus every worker (autoscaling clusters: the minimum), with
the summed resources. A RayJob's PodGroup also reserves its submitter's resources but does not
count it as a member (the submitter waits for the cluster; counting it would deadlock the gang).
Pods carry the PodGroup name, their task (group) name, the queue / priority labels and
``schedulerName: volcano``. The RayCluster controller watches PodGroups (``owns``); as in
KubeRay, that watch cannot start without the PodGroup CRD, so the operator does not start.
"""

from __future__ import annotations

import copy
from typing import Any

from controllers import constants as C
from controllers.batchscheduler import resources as R
from controllers.batchscheduler.base import (
    Scheduler,
    SchedulerError,
    SubmitterPodSpec,
    copy_label,
    set_annotation,
    set_scheduler_name,
)
from controllers.common.quantity import QuantityError, parse_with_format
from kuberay_py.client import AlreadyExists, Client, NotFound, Resource
from kuberay_py.log import get_logger
from kuberay_py.objects import Obj

__all__ = [
    "GROUP_NAME_ANNOTATION",
    "PODGROUPS",
    "QUEUE_LABEL",
    "TASK_SPEC_ANNOTATION",
    "Volcano",
    "pod_group",
    "pod_group_name",
    "pod_group_size",
]

log = get_logger("controllers.batchscheduler.volcano")

PODGROUPS = Resource("scheduling.volcano.sh", "v1beta1", "PodGroup", "podgroups")
QUEUE_LABEL = "volcano.sh/queue-name"
TOPOLOGY_MODE_LABEL = "volcano.sh/network-topology-mode"
TOPOLOGY_TIER_LABEL = "volcano.sh/network-topology-highest-tier-allowed"
PRIORITY_CLASS_LABEL = "ray.io/priority-class-name"
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"


def _labels(obj: Obj) -> dict[str, str]:
    labels: dict[str, str] = (obj.get("metadata") or {}).get("labels") or {}
    return labels


def _from_rayjob(obj: Obj) -> bool:
    return _labels(obj).get(C.RAY_ORIGINATED_FROM_CRD_LABEL_KEY) == "RayJob"


def pod_group_name(obj: Obj) -> str:
    """``ray-<name>-pg``; a RayJob's cluster and Pods use the RayJob's name."""
    name = str(obj["metadata"]["name"])
    if _from_rayjob(obj) and _labels(obj).get(C.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY):
        name = _labels(obj)[C.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY]
    return f"ray-{name}-pg"


def pod_group_size(cluster_spec: dict[str, Any]) -> tuple[int, R.ResourceSum]:
    """``calculatePodGroupParams``: head + workers (the minimum when autoscaling) and their sum."""
    if cluster_spec.get("enableInTreeAutoscaling"):
        return R.min_replicas(cluster_spec) + 1, R.min_resources(cluster_spec)
    return R.desired_replicas(cluster_spec) + 1, R.desired_resources(cluster_spec)


def _submitter_resources(job: Obj, submitter_pod_spec: SubmitterPodSpec) -> R.ResourceSum:
    spec = job.get("spec") or {}
    mode = spec.get("submissionMode") or "K8sJobMode"
    if mode == "K8sJobMode":
        return R.pod_resources(submitter_pod_spec(job))
    if mode == "SidecarMode":
        return R.container_resources({"resources": copy.deepcopy(C.DEFAULT_SUBMITTER_RESOURCES)})
    return {}


def _owner_ref(owner: Obj, kind: str) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": kind,
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pod_group(owner: Obj, kind: str, members: int, res: R.ResourceSum) -> Obj:
    """KubeRay's ``createPodGroup``: the owner's annotations, queue, priority and topology labels."""
    labels = _labels(owner)
    spec: dict[str, Any] = _size(members, res)
    if TOPOLOGY_MODE_LABEL in labels:
        topology: dict[str, Any] = {"mode": labels[TOPOLOGY_MODE_LABEL]}
        if TOPOLOGY_TIER_LABEL in labels:
            raw = labels[TOPOLOGY_TIER_LABEL]
            try:
                topology["highestTierAllowed"] = int(raw)
            except ValueError:
                raise SchedulerError(
                    f"failed to convert {TOPOLOGY_TIER_LABEL} label to int: {raw!r} for podgroup "
                    f"{pod_group_name(owner)} in namespace {owner['metadata']['namespace']}"
                ) from None
        spec["networkTopology"] = topology
    if QUEUE_LABEL in labels:
        spec["queue"] = labels[QUEUE_LABEL]
    if PRIORITY_CLASS_LABEL in labels:
        spec["priorityClassName"] = labels[PRIORITY_CLASS_LABEL]
    meta: dict[str, Any] = {
        "name": pod_group_name(owner),
        "namespace": owner["metadata"]["namespace"],
        "ownerReferences": [_owner_ref(owner, kind)],
    }
    annotations = (owner.get("metadata") or {}).get("annotations")
    if annotations:
        meta["annotations"] = dict(annotations)
    return {
        "apiVersion": PODGROUPS.api_version,
        "kind": PODGROUPS.kind,
        "metadata": meta,
        "spec": spec,
        "status": {"phase": "Pending"},
    }


class Volcano(Scheduler):
    plugin = "volcano"
    name = "volcano"
    owns = PODGROUPS

    def __init__(self, submitter_pod_spec: SubmitterPodSpec) -> None:
        self._submitter_pod_spec = submitter_pod_spec

    async def submit_cluster(self, client: Client, cluster: Obj) -> None:
        if _from_rayjob(cluster):
            return  # the RayJob's PodGroup covers it
        members, res = pod_group_size(cluster.get("spec") or {})
        await self._sync(client, cluster, "RayCluster", members, res)

    async def submit_job(self, client: Client, job: Obj) -> None:
        spec = job.get("spec") or {}
        if not spec.get("rayClusterSpec"):
            meta = job["metadata"]
            raise SchedulerError(
                f"gang scheduling does not support RayJob {meta['namespace']}/{meta['name']} "
                "referencing an existing RayCluster"
            )
        members, res = pod_group_size(spec["rayClusterSpec"])
        await self._sync(
            client,
            job,
            "RayJob",
            members,
            R.sum_resources(res, _submitter_resources(job, self._submitter_pod_spec)),
        )

    def add_metadata(self, parent: Obj, parent_kind: str, child: Obj, group: str) -> None:
        copy_label(parent, child, QUEUE_LABEL)
        copy_label(parent, child, PRIORITY_CLASS_LABEL)
        set_annotation(child, GROUP_NAME_ANNOTATION, pod_group_name(parent))
        set_annotation(child, TASK_SPEC_ANNOTATION, group)
        set_scheduler_name(child, self.name)

    async def cleanup_job(self, client: Client, job: Obj) -> bool:
        """A finished RayJob's PodGroup shrinks to what its cluster still runs (nothing once gone)."""
        spec = job.get("spec") or {}
        if spec.get("clusterSelector"):
            return False
        cluster_name = str((job.get("status") or {}).get("rayClusterName") or "")
        if not cluster_name:
            return False
        members, res = 0, R.ResourceSum()
        try:
            cluster = await client.get(C.RAYCLUSTERS, cluster_name, job["metadata"]["namespace"])
        except NotFound:
            log.info("RayCluster not found, updating PodGroup with empty resources", cluster=cluster_name)
        else:
            if not cluster["metadata"].get("deletionTimestamp"):
                members, res = pod_group_size(cluster.get("spec") or {})
        return await self._sync(client, job, "RayJob", members, res)

    async def _sync(self, client: Client, owner: Obj, kind: str, members: int, res: R.ResourceSum) -> bool:
        """Create the PodGroup, or update its size when it differs; True when something was written."""
        name, namespace = pod_group_name(owner), owner["metadata"]["namespace"]
        try:
            current = await client.get(PODGROUPS, name, namespace)
        except NotFound:
            body = pod_group(owner, kind, members, res)
            try:
                await client.create(PODGROUPS, body, namespace)
            except AlreadyExists:
                return False
            return True
        spec = current.setdefault("spec", {})
        if spec.get("minMember", 0) == members and _same(spec.get("minResources"), res):
            return False
        spec.pop("minMember", None)
        spec.update(_size(members, res))
        await client.update(PODGROUPS, current)
        return True


def _size(members: int, res: R.ResourceSum) -> dict[str, Any]:
    """``minMember`` (omitted when 0, as Volcano's Go type does) and ``minResources``."""
    size: dict[str, Any] = {"minMember": members} if members else {}
    size["minResources"] = R.render(res)
    return size


def _same(current: Any, want: R.ResourceSum) -> bool:
    """apimachinery's ``quota.Equals``: the same names with equal values (not equal strings)."""
    if current is None:
        return False
    try:
        have = R.sum_resources({k: parse_with_format(v) for k, v in dict(current).items()})
    except (QuantityError, TypeError, ValueError):
        return False
    return {k: v for k, (v, _) in have.items()} == {k: v for k, (v, _) in want.items()}
