"""RayCluster status from observed Pods and the head Service (KubeRay ``calculateStatus``).

Pure: the reconciler passes what it read from the cache and the outcome of this round, and
gets back a new status dict. :func:`status_differs` decides whether the status is worth a write;
``lastUpdateTime`` and ``stateTransitionTimes`` never trigger one on their own, so a reconcile that
changes nothing sends nothing.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from controllers import constants as C
from controllers.common import cluster as common
from controllers.common.cluster import SIGNIFICANT_FIELDS
from controllers.common.conditions import (
    Condition,
    ConditionStatus,
    as_condition_status,
    find_condition,
    is_condition_true,
    remove_condition,
    set_condition,
)
from controllers.common.objects import generation_of
from controllers.common.pods import is_running_and_ready
from controllers.common.quantity import Format, QuantityError, format_quantity, parse_with_format
from kuberay_py.objects import json_copy

__all__ = ["SIGNIFICANT_FIELDS", "compute_status", "status_differs"]

# Fields whose change is worth a status write: those plus observedGeneration and the desired
# resources, so `kubectl get` never shows a stale spec.
_COMPARED = (
    *SIGNIFICANT_FIELDS,
    "observedGeneration",
    "desiredCPU",
    "desiredMemory",
    "desiredGPU",
    "desiredTPU",
)

# int32 fields KubeRay's RayClusterStatus tags omitempty: a zero is not written at all.
_OMITTED_WHEN_ZERO = (
    "readyWorkerReplicas",
    "availableWorkerReplicas",
    "desiredWorkerReplicas",
    "minWorkerReplicas",
    "maxWorkerReplicas",
)


def _pod_resources(template: dict[str, Any]) -> dict[str, tuple[Decimal, Format]]:
    """Requests, with limits filling keys that have no request (KubeRay ``CalculatePodResource``)."""
    out: dict[str, tuple[Decimal, Format]] = {}
    for container in (template.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") or {}
        merged = dict(resources.get("limits") or {})
        merged.update(resources.get("requests") or {})
        for key, raw in merged.items():
            try:
                value, fmt = parse_with_format(raw)
            except QuantityError:
                continue
            prev = out.get(key)
            out[key] = (value + prev[0], prev[1]) if prev else (value, fmt)
    return out


def _desired_resources(cluster: dict[str, Any]) -> dict[str, str]:
    spec = common.spec_of(cluster)
    totals: dict[str, tuple[Decimal, Format]] = {}

    def add(res: dict[str, tuple[Decimal, Format]], times: int) -> None:
        for key, (value, fmt) in res.items():
            prev = totals.get(key)
            totals[key] = (value * times + (prev[0] if prev else 0), prev[1] if prev else fmt)

    add(_pod_resources((spec.get("headGroupSpec") or {}).get("template") or {}), 1)
    for group in spec.get("workerGroupSpecs") or []:
        if group.get("suspend") or spec.get("suspend"):
            continue
        add(
            _pod_resources(group.get("template") or {}),
            common.desired_replicas(group) * common.num_of_hosts(group),
        )

    def total(pred: Any) -> str:
        value = Decimal(0)
        fmt = Format.DECIMAL_SI
        for key, (v, f) in totals.items():
            if pred(key):
                value += v
                fmt = f
        return format_quantity(value, fmt)

    return {
        "desiredCPU": total(lambda k: k == "cpu"),
        "desiredMemory": total(lambda k: k == "memory"),
        "desiredGPU": total(lambda k: k.endswith("gpu")),
        "desiredTPU": total(lambda k: k == "google.com/tpu"),
    }


def _head_ready_condition(head: dict[str, Any] | None) -> tuple[ConditionStatus, str, str]:
    if head is None:
        return "False", C.REASON_HEAD_POD_NOT_FOUND, "Head Pod not found"
    status: ConditionStatus = "False"
    reason, message = C.REASON_UNKNOWN, ""
    for cond in (head.get("status") or {}).get("conditions") or []:
        if cond.get("type") != "Ready":
            continue
        status = as_condition_status(cond.get("status", "False"))
        message = str(cond.get("message", ""))
        reason = str(cond.get("reason") or "")
        if status == "True" and not reason:
            reason = C.REASON_HEAD_POD_RUNNING_AND_READY
        reason = reason or C.REASON_UNKNOWN
        break
    if status != "True":
        for cs in (head.get("status") or {}).get("containerStatuses") or []:
            state = cs.get("state") or {}
            detail = state.get("waiting") or state.get("terminated")
            if detail and detail.get("reason"):
                reason = str(detail["reason"])
                message = str(detail.get("message", message))
                break
    return status, reason, message


def _endpoints(service: dict[str, Any] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for port in ((service or {}).get("spec") or {}).get("ports") or []:
        if not port.get("name"):
            continue
        if port.get("nodePort"):
            out[port["name"]] = str(port["nodePort"])
        elif port.get("targetPort") is not None:
            out[port["name"]] = str(port["targetPort"])
        else:
            out[port["name"]] = str(port.get("port", ""))
    return out


def _set_conditions(
    conditions: list[Condition],
    spec: dict[str, Any],
    pods: list[dict[str, Any]],
    head: dict[str, Any] | None,
    *,
    all_ready: bool,
    replica_failure: tuple[str, str] | None,
    now: str,
) -> None:
    """ReplicaFailure, HeadPodReady, RayClusterProvisioned and the suspend pair (the
    RayClusterStatusConditions gate on)."""
    if replica_failure is not None:
        set_condition(conditions, C.COND_REPLICA_FAILURE, "True", *replica_failure, now=now)
    else:
        remove_condition(conditions, C.COND_REPLICA_FAILURE)
    set_condition(conditions, C.COND_HEAD_POD_READY, *_head_ready_condition(head), now=now)

    provisioned = find_condition(conditions, C.COND_RAYCLUSTER_PROVISIONED)
    if provisioned is None or provisioned.get("status") != "True":
        if all_ready:
            set_condition(
                conditions,
                C.COND_RAYCLUSTER_PROVISIONED,
                "True",
                C.REASON_ALL_POD_RUNNING_AND_READY_FIRST_TIME,
                "All Ray Pods are ready for the first time",
                now=now,
            )
        else:
            set_condition(
                conditions,
                C.COND_RAYCLUSTER_PROVISIONED,
                "False",
                C.REASON_RAYCLUSTER_PODS_PROVISIONING,
                "RayCluster Pods are being provisioned for first time",
                now=now,
            )

    suspending = is_condition_true(conditions, C.COND_RAYCLUSTER_SUSPENDING)
    suspended = is_condition_true(conditions, C.COND_RAYCLUSTER_SUSPENDED)
    if suspending:
        if not pods:
            set_condition(
                conditions,
                C.COND_RAYCLUSTER_PROVISIONED,
                "False",
                C.REASON_RAYCLUSTER_PODS_PROVISIONING,
                "RayCluster has been suspended",
                now=now,
            )
            set_condition(
                conditions, C.COND_RAYCLUSTER_SUSPENDING, "False", C.COND_RAYCLUSTER_SUSPENDING, "", now=now
            )
            set_condition(
                conditions, C.COND_RAYCLUSTER_SUSPENDED, "True", C.COND_RAYCLUSTER_SUSPENDED, "", now=now
            )
    elif suspended:
        if not spec.get("suspend"):
            set_condition(
                conditions, C.COND_RAYCLUSTER_SUSPENDED, "False", C.COND_RAYCLUSTER_SUSPENDED, "", now=now
            )
    else:
        # Both conditions are always present (KubeRay's RayClusterStatusConditions gate), False
        # until a suspend starts, so tooling can wait on them from the first status.
        set_condition(
            conditions, C.COND_RAYCLUSTER_SUSPENDED, "False", C.COND_RAYCLUSTER_SUSPENDED, "", now=now
        )
        set_condition(
            conditions,
            C.COND_RAYCLUSTER_SUSPENDING,
            "True" if spec.get("suspend") else "False",
            C.COND_RAYCLUSTER_SUSPENDING,
            "",
            now=now,
        )


def compute_status(
    cluster: dict[str, Any],
    pods: list[dict[str, Any]],
    head_service: dict[str, Any] | None,
    *,
    now: str,
    replica_failure: tuple[str, str] | None = None,
    reconcile_failed: bool = False,
    with_conditions: bool = True,
) -> dict[str, Any]:
    """The status this round observed. ``pods`` are the cluster's head and worker Pods.

    ``with_conditions=False`` is KubeRay's RayClusterStatusConditions gate off: no condition is
    set or removed (those an earlier status has stay as they are), and ``suspended`` means
    ``spec.suspend`` with no Pod left, as before the gate.
    """
    old = cluster.get("status") or {}
    status = json_copy(old)
    spec = common.spec_of(cluster)
    conditions: list[Condition] = status.setdefault("conditions", [])
    status["observedGeneration"] = generation_of(cluster)

    heads = [
        p
        for p in pods
        if (p["metadata"].get("labels") or {}).get(C.RAY_NODE_TYPE_LABEL_KEY) == C.NODE_TYPE_HEAD
    ]
    workers = [
        p
        for p in pods
        if (p["metadata"].get("labels") or {}).get(C.RAY_NODE_TYPE_LABEL_KEY) == C.NODE_TYPE_WORKER
    ]
    live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    head = heads[0] if len(heads) == 1 else None

    groups = spec.get("workerGroupSpecs") or []
    active = [g for g in groups if not g.get("suspend") and not spec.get("suspend")]
    status["desiredWorkerReplicas"] = sum(common.desired_replicas(g) * common.num_of_hosts(g) for g in active)
    status["minWorkerReplicas"] = sum(int(g.get("minReplicas") or 0) * common.num_of_hosts(g) for g in active)
    status["maxWorkerReplicas"] = sum(
        int(g.get("maxReplicas") if g.get("maxReplicas") is not None else 2147483647) * common.num_of_hosts(g)
        for g in active
    )
    status["maxWorkerReplicas"] = min(status["maxWorkerReplicas"], 2147483647)
    status["readyWorkerReplicas"] = sum(1 for p in workers if is_running_and_ready(p))
    status["availableWorkerReplicas"] = sum(
        1 for p in workers if (p.get("status") or {}).get("phase") == "Running"
    )
    status.update(_desired_resources(cluster))

    all_ready = len(live) == status["desiredWorkerReplicas"] + 1 and all(
        is_running_and_ready(p) for p in live
    )
    if with_conditions:
        _set_conditions(
            conditions, spec, pods, head, all_ready=all_ready, replica_failure=replica_failure, now=now
        )
    if not reconcile_failed and all_ready and not spec.get("suspend"):
        status["state"] = C.STATE_READY
    if (
        is_condition_true(conditions, C.COND_RAYCLUSTER_SUSPENDED)
        if with_conditions
        else spec.get("suspend") and not pods
    ):
        status["state"] = C.STATE_SUSPENDED
    if not reconcile_failed:
        # A previous validation problem is fixed: drop its reason.
        status.pop("reason", None)

    head_info: dict[str, str] = {}
    if head is not None:
        pod_ip = (head.get("status") or {}).get("podIP")
        if pod_ip:
            head_info["podIP"] = pod_ip
        head_info["podName"] = head["metadata"]["name"]
    if head_service is not None:
        head_info["serviceName"] = head_service["metadata"]["name"]
        cluster_ip = (head_service.get("spec") or {}).get("clusterIP")
        if cluster_ip and cluster_ip != "None":
            head_info["serviceIP"] = cluster_ip
        elif head is not None and (head.get("status") or {}).get("podIP"):
            head_info["serviceIP"] = head["status"]["podIP"]
    status["head"] = head_info
    status["endpoints"] = _endpoints(head_service)

    if status.get("state") != old.get("state") and status.get("state"):
        status.setdefault("stateTransitionTimes", {})[status["state"]] = now
    for key in _OMITTED_WHEN_ZERO:
        if status.get(key) == 0:
            del status[key]
    if not conditions:
        del status["conditions"]  # omitempty
    return status


def status_differs(old: dict[str, Any] | None, new: dict[str, Any]) -> bool:
    old = old or {}

    def norm(value: Any) -> Any:
        return value if value not in ({}, [], None) else None

    return any(norm(old.get(k)) != norm(new.get(k)) for k in _COMPARED)
