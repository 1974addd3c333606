"""The NetworkPolicy controller (gate RayClusterNetworkPolicy): its own controller, as in KubeRay.

KubeRay v1.7.0 runs it next to the RayCluster controller, only with the gate on, watching
RayClusters on generation changes and the NetworkPolicies they control; its events come from
``networkpolicy-controller``. A reconcile:

* skips a cluster being deleted (the policies go with it through their owner reference) or one
  ``managedBy`` another controller;
* without ``spec.networkPolicy`` deletes the policies this cluster controls (the field was removed);
* otherwise creates or updates the head's and each group's policy, then deletes the ones it
  controls that are no longer wanted (a removed worker group).

A policy of that name that this cluster does not control is left alone: a Warning
``NetworkPolicyNameCollision`` and a rate-limited retry, as KubeRay. Unlike KubeRay, which sends a
Create every reconcile and reads back on AlreadyExists, the cached policy is compared first, so
a converged cluster costs no request. The spec is not validated here: the RayCluster controller
reports an invalid one, and an API error here becomes a Failed* event.
"""

from __future__ import annotations

from typing import Any, TypedDict

from controllers import constants as C
from controllers.common import cluster as common
from controllers.common.events import create_once, delete_once, write_with_events
from controllers.common.objects import managed_here, owned_by
from controllers.common.scope import Deps
from controllers.raycluster.networkpolicy import build_policies, normalised_spec, same_policy
from controllers.raycluster.options import RayClusterOptions
from kuberay_py.client.resources import NETWORKPOLICIES
from kuberay_py.controller import Request, Result
from kuberay_py.log import get_logger
from kuberay_py.objects import Obj

__all__ = ["CONTROLLER_NAME", "EVENT_SOURCE", "NameCollision", "NetworkPolicyReconciler"]

# The controller's name (the metrics' ``controller`` label, logs) and its Events' source.
CONTROLLER_NAME = "networkpolicy"
EVENT_SOURCE = "networkpolicy-controller"
log = get_logger(__name__)


class NameCollision(Exception):
    """A NetworkPolicy of the wanted name exists and another owner controls it."""


class _Events(TypedDict):
    failed: tuple[str, str]
    done: tuple[str, str]


def _events(verb: str, ns: str, name: str) -> _Events:
    """KubeRay's ``FailedTo<Verb>NetworkPolicy`` / ``<Verb>dNetworkPolicy`` events of one write."""
    ref = f"NetworkPolicy {ns}/{name}"
    return {
        "failed": (f"FailedTo{verb}NetworkPolicy", f"Failed to {verb.lower()} {ref}: {{error}}"),
        "done": (f"{verb}dNetworkPolicy", f"{verb}d {ref}"),
    }


class NetworkPolicyReconciler:
    def __init__(self, deps: Deps[RayClusterOptions]) -> None:
        self.deps = deps

    async def reconcile(self, request: Request) -> Result:
        cluster = self.deps.cache.get(C.RAYCLUSTERS, request.name, request.namespace)
        if cluster is None or cluster["metadata"].get("deletionTimestamp"):
            return Result()
        if not managed_here(cluster):
            log.info(
                "skipping RayCluster managed by a custom controller",
                managed_by=common.spec_of(cluster)["managedBy"],
            )
            return Result()
        if common.spec_of(cluster).get("networkPolicy") is None:
            await self._delete_stale(cluster, set())
            return Result()
        wanted = build_policies(cluster)
        for policy in wanted:
            await self._apply(cluster, policy)
        await self._delete_stale(cluster, {p["metadata"]["name"] for p in wanted})
        return Result()

    async def _apply(self, cluster: Obj, desired: dict[str, Any]) -> None:
        ns, name = desired["metadata"]["namespace"], desired["metadata"]["name"]
        existing = self.deps.cache.get(NETWORKPOLICIES, name, ns)
        if existing is None:
            create = self.deps.client.create(NETWORKPOLICIES, desired, ns)
            created = await create_once(self.deps.recorder, cluster, create, **_events("Create", ns, name))
            if created is not None:
                return
            existing = await self.deps.client.get(NETWORKPOLICIES, name, ns)  # the cache had not seen it yet
        if not owned_by(existing, cluster["metadata"]["uid"]):
            self.deps.recorder.event(
                cluster,
                C.WARNING,
                "NetworkPolicyNameCollision",
                f"NetworkPolicy {ns}/{name} already exists and is not owned by this RayCluster, network "
                "isolation will not be applied. Rename the existing NetworkPolicy or use a different "
                "RayCluster name to avoid the collision",
            )
            raise NameCollision(
                f"NetworkPolicy {ns}/{name} already exists and is not owned by this RayCluster"
            )
        if same_policy(existing, desired):
            return
        body = {**existing, "metadata": {**existing["metadata"], "labels": desired["metadata"]["labels"]}}
        body["spec"] = normalised_spec(desired["spec"])
        update = self.deps.client.update(NETWORKPOLICIES, body)
        await write_with_events(self.deps.recorder, cluster, update, **_events("Update", ns, name))

    async def _delete_stale(self, cluster: Obj, wanted: set[str]) -> None:
        ns, cluster_name = cluster["metadata"]["namespace"], cluster["metadata"]["name"]
        for policy in self.deps.cache.list(
            NETWORKPOLICIES, ns, labels={C.RAY_CLUSTER_LABEL_KEY: cluster_name}
        ):
            name = policy["metadata"]["name"]
            if name in wanted or not owned_by(policy, cluster["metadata"]["uid"]):
                continue
            delete = self.deps.client.delete(NETWORKPOLICIES, name, ns)
            await delete_once(self.deps.recorder, cluster, delete, **_events("Delete", ns, name))
