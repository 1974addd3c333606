"""Kubernetes Workload-Aware Scheduling (the ``KubernetesWAS`` gate, alpha, off; KubeRay v1.7.0).

With the gate on (and no ``--batch-scheduler`` / ``--enable-batch-scheduler``), a RayCluster
labelled ``ray.io/gang-scheduling-enabled: "true"`` and not autoscaling gets the Kubernetes 1.36
``scheduling.k8s.io/v1alpha2`` objects the default scheduler gangs its Pods by:

* a Workload ``<cluster>`` with one PodGroup template ``cluster`` (gang ``minCount`` = head +
  desired workers) and ``controllerRef`` to the RayCluster;
* a PodGroup ``<cluster>-cluster`` made from that template;
* on every Pod, ``schedulerName: default-scheduler`` and ``schedulingGroup.podGroupName``.

A changed size is not patched: the stale PodGroup (and, for a stale Workload, the PodGroup
first, then the Workload) is deleted, and the reconcile fails so the next one recreates them, as
KubeRay does (their specs are immutable). A cluster that loses the label or turns on autoscaling
has both deleted. The RayCluster controller watches both kinds; without the v1alpha2 API served
those watches never sync, so the operator does not start (KubeRay exits at start). RayJobs get
nothing from this scheduler (KubeRay's hooks ignore them); their RayCluster does.
"""

from __future__ import annotations

from typing import Any

from controllers import constants as C
from controllers.batchscheduler import resources as R
from controllers.batchscheduler.base import Scheduler, SchedulerError, set_scheduler_name
from kuberay_py.client import Client, NotFound, Resource
from kuberay_py.log import get_logger
from kuberay_py.objects import Obj

__all__ = ["PODGROUPS", "WORKLOADS", "KubernetesWAS", "pod_group", "workload"]

log = get_logger("controllers.batchscheduler.kubernetes_was")

WORKLOADS = Resource("scheduling.k8s.io", "v1alpha2", "Workload", "workloads")
PODGROUPS = Resource("scheduling.k8s.io", "v1alpha2", "PodGroup", "podgroups")
TEMPLATE = "cluster"
PROTECTION_FINALIZER = "scheduling.k8s.io/podgroup-protection"
GANG_LABEL = "ray.io/gang-scheduling-enabled"


def skip_reason(cluster: Obj) -> str:
    labels = (cluster.get("metadata") or {}).get("labels") or {}
    if str(labels.get(GANG_LABEL, "")).lower() != "true":
        return "gang scheduling not enabled on RayCluster"
    if (cluster.get("spec") or {}).get("enableInTreeAutoscaling"):
        return "autoscaling is not yet supported"
    return ""


def pod_group_name(cluster: Obj) -> str:
    return f"{cluster['metadata']['name']}-{TEMPLATE}"


def _policy(cluster: Obj) -> dict[str, Any]:
    return {"gang": {"minCount": 1 + R.desired_replicas(cluster.get("spec") or {})}}


def _meta(cluster: Obj, name: str) -> dict[str, Any]:
    meta = cluster["metadata"]
    return {
        "name": name,
        "namespace": meta["namespace"],
        "labels": {C.RAY_CLUSTER_LABEL_KEY: meta["name"]},
        "ownerReferences": [
            {
                "apiVersion": "ray.io/v1",
                "kind": "RayCluster",
                "name": meta["name"],
                "uid": meta["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }


def workload(cluster: Obj) -> Obj:
    name = cluster["metadata"]["name"]
    return {
        "apiVersion": WORKLOADS.api_version,
        "kind": WORKLOADS.kind,
        "metadata": _meta(cluster, name),
        "spec": {
            "controllerRef": {"apiGroup": "ray.io", "kind": "RayCluster", "name": name},
            "podGroupTemplates": [{"name": TEMPLATE, "schedulingPolicy": _policy(cluster)}],
        },
    }


def pod_group(cluster: Obj) -> Obj:
    return {
        "apiVersion": PODGROUPS.api_version,
        "kind": PODGROUPS.kind,
        "metadata": _meta(cluster, pod_group_name(cluster)),
        "spec": {
            "podGroupTemplateRef": {
                "workload": {"workloadName": cluster["metadata"]["name"], "podGroupTemplateName": TEMPLATE}
            },
            "schedulingPolicy": _policy(cluster),
        },
    }


def _min_count(policy: Any) -> Any:
    return ((policy or {}).get("gang") or {}).get("minCount")


def _controlled_by(obj: Obj, cluster: Obj) -> bool:
    uid = cluster["metadata"]["uid"]
    return any(
        o.get("controller") and o.get("uid") == uid for o in obj["metadata"].get("ownerReferences") or []
    )


async def _get(client: Client, res: Resource, name: str, namespace: str) -> Obj | None:
    try:
        return await client.get(res, name, namespace)
    except NotFound:
        return None


async def _existing_or_create(client: Client, res: Resource, cluster: Obj, want: Obj) -> Obj | None:
    """The cluster's existing object of this kind, or None after creating ``want``.

    An object of that name the cluster does not control is refused, never adopted: v1alpha2
    objects are immutable, so another owner's would have to be deleted to be corrected.
    """
    ns, name = cluster["metadata"]["namespace"], want["metadata"]["name"]
    current = await _get(client, res, name, ns)
    if current is None:
        await client.create(res, want, ns)
        return None
    if not _controlled_by(current, cluster):
        raise SchedulerError(
            f"{res.kind} {ns}/{name} already exists and is not owned by this RayCluster; rename it or "
            "use a different RayCluster name to avoid the collision"
        )
    return current


class KubernetesWAS(Scheduler):
    plugin = "kubernetes-was-v1alpha2"
    name = "default-scheduler"
    owns = WORKLOADS

    async def submit_cluster(self, client: Client, cluster: Obj) -> None:
        reason = skip_reason(cluster)
        if reason:
            log.debug("skipping Kubernetes workload-aware scheduling", reason=reason)
            await self._delete_all(client, cluster)
            return
        want_wl, want_pg = workload(cluster), pod_group(cluster)
        await self._sync_workload(client, cluster, want_wl)
        await self._sync_pod_group(client, cluster, want_pg)

    def add_metadata(self, parent: Obj, parent_kind: str, child: Obj, group: str) -> None:
        if parent_kind != "RayCluster" or skip_reason(parent):
            return
        set_scheduler_name(child, self.name)
        if child.get("kind") in (None, "Pod"):
            child.setdefault("spec", {})["schedulingGroup"] = {"podGroupName": pod_group_name(parent)}

    async def _sync_workload(self, client: Client, cluster: Obj, want: Obj) -> None:
        ns, name = cluster["metadata"]["namespace"], want["metadata"]["name"]
        current = await _existing_or_create(client, WORKLOADS, cluster, want)
        if current is None:
            return
        if current["metadata"].get("deletionTimestamp"):
            raise SchedulerError(f"Workload {ns}/{name} is being deleted, will retry")
        templates = (current.get("spec") or {}).get("podGroupTemplates") or []
        wanted = want["spec"]["podGroupTemplates"][0]
        stale = (
            len(templates) != 1
            or templates[0].get("name") != wanted["name"]
            or _min_count(templates[0].get("schedulingPolicy")) != _min_count(wanted["schedulingPolicy"])
        )
        if not stale:
            return
        group = await _get(client, PODGROUPS, pod_group_name(cluster), ns)
        if group is not None and _controlled_by(group, cluster):
            await self._delete_pod_group(client, group)
            raise SchedulerError(
                f"deleted PodGroup {ns}/{pod_group_name(cluster)} before replacing stale Workload, "
                "will retry after deletion completes"
            )
        await _delete_exact(client, WORKLOADS, current)
        raise SchedulerError(f"deleted stale Workload {ns}/{name}, will retry after deletion completes")

    async def _sync_pod_group(self, client: Client, cluster: Obj, want: Obj) -> None:
        ns, name = cluster["metadata"]["namespace"], want["metadata"]["name"]
        current = await _existing_or_create(client, PODGROUPS, cluster, want)
        if current is None:
            return
        if current["metadata"].get("deletionTimestamp"):
            await self._delete_pod_group(client, current)
            raise SchedulerError(f"PodGroup {ns}/{name} is being deleted, will retry")
        have = _min_count((current.get("spec") or {}).get("schedulingPolicy"))
        if have is not None and have == _min_count(want["spec"]["schedulingPolicy"]):
            return
        await self._delete_pod_group(client, current)
        raise SchedulerError(f"deleted stale PodGroup {ns}/{name}, will retry after deletion completes")

    async def _delete_pod_group(self, client: Client, group: Obj) -> bool:
        """Drop the protection finalizer (the scheduler would keep it while Pods run), then delete."""
        changed = False
        finalizers = list(group["metadata"].get("finalizers") or [])
        if PROTECTION_FINALIZER in finalizers:
            body = dict(group)
            body["metadata"] = {
                **group["metadata"],
                "finalizers": [f for f in finalizers if f != PROTECTION_FINALIZER],
            }
            try:
                group = await client.update(PODGROUPS, body)
            except NotFound:
                return True
            changed = True
        if group["metadata"].get("deletionTimestamp"):
            return changed
        try:
            await _delete_exact(client, PODGROUPS, group)
        except NotFound:
            return changed
        return True

    async def _delete_all(self, client: Client, cluster: Obj) -> None:
        ns = cluster["metadata"]["namespace"]
        group = await _get(client, PODGROUPS, pod_group_name(cluster), ns)
        if group is not None and _controlled_by(group, cluster):
            await self._delete_pod_group(client, group)
            raise SchedulerError(f"waiting for PodGroup {ns}/{pod_group_name(cluster)} to finish deleting")
        wl = await _get(client, WORKLOADS, cluster["metadata"]["name"], ns)
        if wl is None or not _controlled_by(wl, cluster):
            return
        if wl["metadata"].get("deletionTimestamp"):
            raise SchedulerError(f"Workload {ns}/{wl['metadata']['name']} is being deleted, will retry")
        try:
            await _delete_exact(client, WORKLOADS, wl)
        except NotFound:
            pass


async def _delete_exact(client: Client, res: Resource, obj: Obj) -> None:
    """Delete this very object (a UID precondition), never a namesake created meanwhile."""
    meta = obj["metadata"]
    await client.delete(res, meta["name"], meta["namespace"], preconditions={"uid": meta["uid"]})
