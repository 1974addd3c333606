"""The RayService status as the controller builds it: the CRD's ``status``, typed.

One working copy per reconcile lives on the :class:`~controllers.rayservice.context.ServiceContext`;
every phase edits that copy and the reconciler writes it once. The field names are the CRD's
(``controllers.api.rayservice.RayServiceStatuses`` validates the same shape); ``total=False``
because a field the operator has not set yet is absent, not null.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from controllers.common.conditions import Condition

__all__ = [
    "AppStatus",
    "ClusterRole",
    "DeploymentStatus",
    "RayServiceStatus",
    "ServiceStatusDetail",
    "cluster_name",
    "cluster_names",
    "role_key",
]

# Which of the two clusters a RayService tracks: the one serving, the one being prepared.
ClusterRole = Literal["active", "pending"]


class DeploymentStatus(TypedDict):
    status: str
    message: str


class AppStatus(TypedDict):
    status: str
    message: str
    serveDeploymentStatuses: dict[str, DeploymentStatus]


class ServiceStatusDetail(TypedDict, total=False):
    rayClusterName: str
    applicationStatuses: dict[str, AppStatus]
    rayClusterStatus: dict[str, Any]  # a copy of the RayCluster's status (never compared)
    targetCapacity: int
    trafficRoutedPercent: int
    lastTrafficMigratedTime: str


class RayServiceStatus(TypedDict, total=False):
    activeServiceStatus: ServiceStatusDetail
    pendingServiceStatus: ServiceStatusDetail
    conditions: list[Condition]
    numServeEndpoints: int
    observedGeneration: int
    serviceStatus: str
    lastUpdateTime: str


def role_key(role: ClusterRole) -> Literal["activeServiceStatus", "pendingServiceStatus"]:
    return "activeServiceStatus" if role == "active" else "pendingServiceStatus"


def cluster_name(status: RayServiceStatus, role: ClusterRole) -> str:
    """The name of the active or pending cluster, ``""`` when there is none."""
    return str(status.get(role_key(role), {}).get("rayClusterName") or "")


def cluster_names(status: RayServiceStatus) -> list[str]:
    """The active and pending clusters' names, those that are set."""
    return [n for n in (cluster_name(status, "active"), cluster_name(status, "pending")) if n]
