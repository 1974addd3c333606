"""RayService status as pure functions: endpoints, conditions, and "did anything change?".

Status is written only when :func:`status_differs` says so (KubeRay's
InconsistentRayServiceStatuses): ``lastUpdateTime`` and the copied ``rayClusterStatus`` never
trigger a write by themselves, so a steady RayService costs no API writes however often it is
reconciled.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, cast

from controllers import constants as c
from controllers.common.conditions import ConditionStatus, find_condition, is_condition_true, set_condition
from controllers.rayservice.shapes import RayServiceStatus, cluster_name
from kuberay_py.clock import format_rfc3339, parse_rfc3339

__all__ = [
    "calculate_conditions",
    "copy_cluster_statuses",
    "initializing_deadline_passed",
    "is_initializing_timeout",
    "kuberay_status_shape",
    "ready_endpoint_pod_uids",
    "rfc3339",
    "status_differs",
]


rfc3339 = format_rfc3339


def ready_endpoint_pod_uids(endpoint_slices: Iterable[dict[str, Any]]) -> dict[str, str]:
    """Ready endpoints by Pod UID (dual-stack slices list a Pod twice) -> the Pod's name."""
    ready: dict[str, str] = {}
    for endpoint_slice in endpoint_slices:
        for endpoint in endpoint_slice.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready") is not True:
                continue
            ref = endpoint.get("targetRef") or {}
            uid = ref.get("uid")
            if uid:
                ready[str(uid)] = str(ref.get("name", ""))
    return ready


def calculate_conditions(status: RayServiceStatus, *, generation: int, now: datetime) -> None:
    """KubeRay's calculateConditions for ``Ready`` and ``UpgradeInProgress`` (mutates ``status``)."""
    conditions = status.setdefault("conditions", [])
    stamp = rfc3339(now)

    def put(type_: str, value: ConditionStatus, reason: str, message: str) -> None:
        set_condition(conditions, type_, value, reason, message, observed_generation=generation, now=stamp)

    if not conditions:
        put(c.COND_RAYSERVICE_READY, "False", c.REASON_INITIALIZING, "RayService is initializing")
        put(c.COND_UPGRADE_IN_PROGRESS, "False", c.REASON_INITIALIZING, "RayService is initializing")
    if int(status.get("numServeEndpoints") or 0) > 0:
        put(
            c.COND_RAYSERVICE_READY,
            "True",
            c.REASON_NON_ZERO_SERVE_ENDPOINTS,
            "Number of serve endpoints is greater than 0",
        )
    elif is_condition_true(conditions, c.COND_RAYSERVICE_READY):
        put(
            c.COND_RAYSERVICE_READY,
            "False",
            c.REASON_ZERO_SERVE_ENDPOINTS,
            "Number of serve endpoints dropped to 0",
        )
    else:
        ready = find_condition(conditions, c.COND_RAYSERVICE_READY)
        if ready is not None and ready.get("reason") == c.REASON_VALIDATION_FAILED:
            # The spec is valid again (we got here): go back to Initializing until endpoints appear.
            put(c.COND_RAYSERVICE_READY, "False", c.REASON_INITIALIZING, "RayService is initializing")
    active, pending = cluster_name(status, "active"), cluster_name(status, "pending")
    if active and pending:
        put(
            c.COND_UPGRADE_IN_PROGRESS,
            "True",
            c.REASON_BOTH_ACTIVE_PENDING_CLUSTERS_EXIST,
            "Both active and pending Ray clusters exist",
        )
    elif active:
        put(
            c.COND_UPGRADE_IN_PROGRESS,
            "False",
            c.REASON_NO_PENDING_CLUSTER,
            "Active Ray cluster exists and no pending Ray cluster",
        )
    else:
        cond = find_condition(conditions, c.COND_UPGRADE_IN_PROGRESS)
        if cond is None or cond.get("reason") not in (c.REASON_INITIALIZING, c.REASON_INITIALIZING_TIMEOUT):
            put(
                c.COND_UPGRADE_IN_PROGRESS,
                "Unknown",
                c.REASON_NO_ACTIVE_CLUSTER,
                "No active Ray cluster exists, and the RayService is not initializing",
            )
    status["serviceStatus"] = (
        c.SERVICE_STATUS_RUNNING if is_condition_true(conditions, c.COND_RAYSERVICE_READY) else ""
    )


def _comparable(status: Mapping[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = copy.deepcopy(dict(status or {}))
    out.pop("lastUpdateTime", None)
    for key in ("activeServiceStatus", "pendingServiceStatus"):
        sub = out.get(key)
        if isinstance(sub, dict):
            sub.pop("rayClusterStatus", None)
            for drop in [k for k, v in sub.items() if v in (None, "", {}, [])]:
                del sub[drop]
            if not sub:
                del out[key]
    for cond in out.get("conditions") or []:
        cond.pop("lastTransitionTime", None)  # moves only with status, which is compared
    for drop in [k for k, v in out.items() if v in (None, "", {}, [])]:
        del out[drop]
    return out


def status_differs(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> bool:
    """Whether a status write is due: anything but lastUpdateTime and the copied cluster status."""
    return _comparable(kuberay_status_shape(old or {})) != _comparable(kuberay_status_shape(new or {}))


_ZERO_CLUSTER_STATUS = {"desiredCPU": "0", "desiredGPU": "0", "desiredMemory": "0", "desiredTPU": "0"}
# RayClusterStatus's fields; all omitempty except the four quantities and ``head`` (structs).
_CLUSTER_STATUS_FIELDS = (
    "state",
    "desiredCPU",
    "desiredMemory",
    "desiredGPU",
    "desiredTPU",
    "lastUpdateTime",
    "stateTransitionTimes",
    "endpoints",
    "head",
    "reason",
    "conditions",
    "readyWorkerReplicas",
    "availableWorkerReplicas",
    "desiredWorkerReplicas",
    "minWorkerReplicas",
    "maxWorkerReplicas",
    "observedGeneration",
)
_HEAD_INFO_FIELDS = ("podIP", "serviceIP", "podName", "serviceName")


def _go_cluster_status(raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """A RayCluster's status as KubeRay's ``RayClusterStatus`` struct re-encodes it: unknown
    fields gone, zero-valued omitempty ones dropped, the quantities and ``head`` always there."""
    out: dict[str, Any] = {}
    for key in _CLUSTER_STATUS_FIELDS:
        value = (raw or {}).get(key)
        if value is None or value == "" or value == {} or value == [] or (value == 0 and key != "head"):
            continue
        out[key] = copy.deepcopy(value)
    head = out.get("head")
    out["head"] = {k: head[k] for k in _HEAD_INFO_FIELDS if head.get(k)} if isinstance(head, dict) else {}
    for field, zero in _ZERO_CLUSTER_STATUS.items():
        out.setdefault(field, zero)
    return out


def copy_cluster_statuses(
    status: RayServiceStatus | dict[str, Any],
    active: Mapping[str, Any] | None,
    pending: Mapping[str, Any] | None,
) -> None:
    """KubeRay's ``calculateStatus`` copy: each side's ``rayClusterStatus`` becomes its cluster's
    current status, or the zero status when that side has no cluster (not yet created, just
    promoted away, gone). Nothing of an earlier copy survives, as nothing does in KubeRay."""
    target = cast(dict[str, Any], status)
    for key, cluster in (("activeServiceStatus", active), ("pendingServiceStatus", pending)):
        sub = target.get(key)
        if not isinstance(sub, dict):
            sub = target[key] = {}
        sub["rayClusterStatus"] = _go_cluster_status(cluster.get("status") if cluster is not None else None)


def kuberay_status_shape(status: Mapping[str, Any]) -> dict[str, Any]:
    """The status as KubeRay's Go types serialise it (a copy).

    ``serviceStatus`` and ``numServeEndpoints`` are omitempty, so an empty/zero one is absent;
    ``activeServiceStatus``/``pendingServiceStatus`` and their ``rayClusterStatus`` are plain
    structs, so they are always present, with the zero quantities as ``"0"`` and ``head: {}``.
    Tools written against KubeRay read these paths, and a takeover in either direction then
    shows no status churn.
    """
    out: dict[str, Any] = copy.deepcopy(dict(status))
    if out.get("serviceStatus") == "":
        del out["serviceStatus"]
    if out.get("numServeEndpoints") == 0:
        del out["numServeEndpoints"]
    for key in ("activeServiceStatus", "pendingServiceStatus"):
        sub = out.get(key)
        if not isinstance(sub, dict):
            sub = out[key] = {}
        cluster_status = sub.get("rayClusterStatus")
        if not isinstance(cluster_status, dict):
            cluster_status = sub["rayClusterStatus"] = {}
        for field, zero in _ZERO_CLUSTER_STATUS.items():
            cluster_status.setdefault(field, zero)
        cluster_status.setdefault("head", {})
    return out


def initializing_deadline_passed(status: RayServiceStatus, timeout_s: float, now: datetime) -> float | None:
    """KubeRay's initializing timeout: seconds left while ``Ready`` is False/Initializing.

    Returns None when the check does not apply (Ready is not Initializing), a value <= 0 once the
    RayService has been initializing for ``timeout_s`` or longer.
    """
    ready = find_condition(status.get("conditions"), c.COND_RAYSERVICE_READY)
    if ready is None or ready.get("status") != "False" or ready.get("reason") != c.REASON_INITIALIZING:
        return None
    since = parse_rfc3339(ready.get("lastTransitionTime"))
    if since is None:
        return None
    return timeout_s - (now - since).total_seconds()


def is_initializing_timeout(status: RayServiceStatus) -> bool:
    """A terminal state: the user must recreate the RayService (KubeRay's rule)."""
    ready = find_condition(status.get("conditions"), c.COND_RAYSERVICE_READY)
    return (
        ready is not None
        and ready.get("status") == "False"
        and ready.get("reason") == c.REASON_INITIALIZING_TIMEOUT
    )
