"""Which Pods to delete and how many to create, per worker group (pure planning).

Kept apart from the reconciler so the rules are testable without an API server:

* Pods are deleted only when terminal (Failed/Succeeded, or the Ray container terminated under
  ``restartPolicy: Never``); never for failing probes, which kubelet handles by restarting.
* ``workersToDelete`` is always honoured, but only for Pods the cache still shows alive, so an
  uncleared list costs no requests.
* A worker Pod being deleted counts (and holds its replica index) until it is gone, as in KubeRay.
* With autoscaling on, surplus Pods are not deleted at random (the autoscaler chooses).
* Multi-host replica groups live and die together (with KubeRay's RayMultiHostIndexing gate on).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from controllers import constants as C
from controllers.common import cluster as common
from controllers.common.objects import is_deleting

__all__ = ["GroupPlan", "plan_group", "should_delete_pod"]


def _labels(pod: dict[str, Any]) -> dict[str, str]:
    return pod["metadata"].get("labels") or {}


def should_delete_pod(pod: dict[str, Any]) -> tuple[bool, str]:
    status = pod.get("status") or {}
    phase = status.get("phase")
    name = pod["metadata"].get("name", "")
    if phase in ("Failed", "Succeeded"):
        return True, f"The Pod {name} is in the terminal phase {phase}; it will not restart."
    restart_policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
    if phase == "Running" and restart_policy == "Never":
        containers = (pod.get("spec") or {}).get("containers") or [{}]
        ray_name = containers[C.RAY_CONTAINER_INDEX].get("name")
        for cs in status.get("containerStatuses") or []:
            if cs.get("name") == ray_name and (cs.get("state") or {}).get("terminated"):
                return True, f"The Ray container of Pod {name} terminated and restartPolicy is Never."
    return False, ""


@dataclass
class GroupPlan:
    delete: list[dict[str, Any]] = field(default_factory=list)
    delete_reasons: dict[str, str] = field(default_factory=dict)
    create_replicas: int = 0  # replica groups (numOfHosts Pods each) to create
    surplus_kept: int = 0  # Pods above desired left alone because the autoscaler owns scale-down


def _replica_groups(pods: list[dict[str, Any]], by_replica: bool) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for pod in pods:
        key = (by_replica and _labels(pod).get(C.RAY_WORKER_REPLICA_NAME_LABEL_KEY)) or pod["metadata"][
            "name"
        ]
        groups.setdefault(key, []).append(pod)
    return groups


def plan_group(
    cluster: dict[str, Any],
    group: dict[str, Any],
    pods: list[dict[str, Any]],
    *,
    random_delete: bool,
    multi_host_indexing: bool = True,
) -> GroupPlan:
    """Plan one group from all its Pods, terminating ones included.

    A Pod being deleted still counts towards the group's replicas (and keeps its replica index)
    until it is gone, as in KubeRay, which lists worker Pods without looking at
    ``deletionTimestamp``: a Pod deleted by hand is replaced once it has left, so two Pods never
    hold one replica index. It is never deleted again, it is the first to go on a scale-down
    (it is leaving anyway), and a ``workersToDelete`` entry naming it stops it counting.

    ``multi_host_indexing=False`` is KubeRay's RayMultiHostIndexing gate off: a multi-host group
    is planned Pod by Pod (``replicas * numOfHosts`` Pods, each deleted and created alone), and
    ``create_replicas`` counts Pods.
    """
    plan = GroupPlan()
    hosts = common.num_of_hosts(group)
    suspended = bool(group.get("suspend"))
    desired = 0 if suspended else common.desired_replicas(group)
    if suspended:
        plan.delete = [p for p in pods if not is_deleting(p)]
        return plan
    if not multi_host_indexing:
        desired, hosts = desired * hosts, 1
    to_delete: dict[str, dict[str, Any]] = {}

    def remove(members: list[dict[str, Any]], reason: str) -> None:
        for member in members:
            if not is_deleting(member):
                to_delete[member["metadata"]["name"]] = member
                plan.delete_reasons.setdefault(member["metadata"]["name"], reason)

    replicas = _replica_groups(pods, multi_host_indexing)
    # 1. Terminal Pods and, for multi-host, their whole replica group; a multi-host replica group
    # missing a host (or with one leaving) loses the others too.
    broken = False
    for key, members in replicas.items():
        for pod in members:
            delete, reason = should_delete_pod(pod)
            if delete and not is_deleting(pod):
                broken = True
                remove(members, reason)
        leaving = [m for m in members if is_deleting(m)]
        if hosts > 1 and (len(members) != hosts or leaving) and len(leaving) != len(members):
            broken = True
            remove(members, f"Replica group {key} is incomplete.")
    # 2. workersToDelete (a named multi-host Pod takes its replica group along).
    names = set(((group.get("scaleStrategy") or {}).get("workersToDelete")) or [])
    named = {k for k, members in replicas.items() if any(m["metadata"]["name"] in names for m in members)}
    for key in named:
        remove(replicas[key], "Listed in workersToDelete.")
    plan.delete = list(to_delete.values())
    if broken:
        # KubeRay creates nothing in the round that removed unhealthy Pods: the replica index
        # they hold is free only once they are gone.
        return plan
    # Leaving replica groups first: they are the surplus that costs no request.
    remaining = sorted(
        (k for k in replicas if k not in named),
        key=lambda k: not all(is_deleting(m) for m in replicas[k]),
    )
    diff = desired - len(remaining)
    if diff > 0:
        plan.create_replicas = diff
    elif diff < 0:
        surplus = [k for k in remaining[:-diff] if not all(is_deleting(m) for m in replicas[k])]
        if common.is_autoscaling(cluster) and not random_delete:
            plan.surplus_kept = len(surplus) * hosts
        else:
            for key in surplus:
                remove(replicas[key], "Scaling down to the desired replicas.")
            plan.delete = list(to_delete.values())
    return plan
