"""kubernetes-sigs/scheduler-plugins coscheduling (``--batch-scheduler=scheduler-plugins``).

For a RayCluster labelled ``ray.io/gang-scheduling-enabled``: one ``scheduling.x-k8s.io/v1alpha1``
PodGroup named after the cluster (head + desired workers, their summed resources), created once
and never resized, as KubeRay v1.7.0 does; its Pods carry ``scheduling.x-k8s.io/pod-group``.
Every Pod gets ``schedulerName: scheduler-plugins-scheduler``. KubeRay supports RayClusters only:
its submission hook returns an error for a RayJob, so a RayJob never leaves Initializing under
this scheduler (reproduced, see docs/differences.md). There is no watch on these PodGroups; a
cluster without their CRD fails its reconcile with the API's error, as KubeRay's does.
"""

from __future__ import annotations

from typing import Any

from controllers.batchscheduler import resources as R
from controllers.batchscheduler.base import Scheduler, SchedulerError, set_scheduler_name
from kuberay_py.client import AlreadyExists, Client, NotFound, Resource
from kuberay_py.objects import Obj

__all__ = ["PODGROUPS", "POD_GROUP_LABEL", "SchedulerPlugins", "pod_group"]

PODGROUPS = Resource("scheduling.x-k8s.io", "v1alpha1", "PodGroup", "podgroups")
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
GANG_LABEL = "ray.io/gang-scheduling-enabled"


def _gang(obj: Obj) -> bool:
    return GANG_LABEL in ((obj.get("metadata") or {}).get("labels") or {})


def pod_group(cluster: Obj) -> Obj:
    meta = cluster["metadata"]
    spec = cluster.get("spec") or {}
    owner: dict[str, Any] = {
        "apiVersion": cluster.get("apiVersion") or "ray.io/v1",
        "kind": cluster.get("kind") or "RayCluster",
        "name": meta["name"],
        "uid": meta["uid"],
    }
    return {
        "apiVersion": PODGROUPS.api_version,
        "kind": PODGROUPS.kind,
        "metadata": {"name": meta["name"], "namespace": meta["namespace"], "ownerReferences": [owner]},
        "spec": {
            "minMember": R.desired_replicas(spec) + 1,
            "minResources": R.render(R.desired_resources(spec)),
        },
    }


class SchedulerPlugins(Scheduler):
    plugin = "scheduler-plugins"
    name = "scheduler-plugins-scheduler"

    async def submit_cluster(self, client: Client, cluster: Obj) -> None:
        if not _gang(cluster):
            return
        meta = cluster["metadata"]
        try:
            await client.get(PODGROUPS, meta["name"], meta["namespace"])
            return
        except NotFound:
            pass
        try:
            await client.create(PODGROUPS, pod_group(cluster), meta["namespace"])
        except AlreadyExists:
            return

    async def submit_job(self, client: Client, job: Obj) -> None:
        raise SchedulerError("currently only RayCluster is supported, got *v1.RayJob")

    def add_metadata(self, parent: Obj, parent_kind: str, child: Obj, group: str) -> None:
        if _gang(parent):
            labels = child.setdefault("metadata", {}).get("labels") or {}
            labels[POD_GROUP_LABEL] = parent["metadata"]["name"]
            child["metadata"]["labels"] = labels
        set_scheduler_name(child, self.name)
