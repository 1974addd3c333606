"""The Pod as the operator's cache keeps it, and the one rule for "this Pod is ready".

:class:`SlimPod` is the contract between the cache transform
(:func:`controllers.raycluster.pod_cache.slim_pod`, which keeps exactly these fields) and every
controller reading cached Pods: a controller that starts reading a new Pod field adds it here,
and the transform keeps it from then on.

Readiness: a Pod is ready when it runs, its ``Ready`` condition is ``True`` and it is not being
deleted. The last clause is the one KubeRay's ``IsRunningAndReady`` lacks; it follows Kubernetes
itself: the EndpointSlice controller marks a terminating Pod's endpoint not ready, and the
ReplicaSet controller counts ``readyReplicas`` over active (not terminating) Pods only. A Pod
being deleted keeps ``Ready=True`` until its containers stop, but nothing should be routed to it,
promoted onto it or counted as capacity.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypedDict

from controllers.common.objects import is_deleting
from kuberay_py.objects import Obj

__all__ = [
    "ContainerStatus",
    "PodContainer",
    "PodMetadata",
    "PodSpec",
    "PodStatus",
    "SlimPod",
    "has_ready_condition",
    "is_running_and_ready",
    "live_pods",
]


class PodMetadata(TypedDict, total=False):
    name: str  # store key
    namespace: str
    uid: str  # expectations, health-check targets, auth-token memory
    resourceVersion: str  # relist diff
    creationTimestamp: str  # the newest head Pod wins
    deletionTimestamp: str  # live vs terminating
    generateName: str  # expectations for generated names
    generation: int
    deletionGracePeriodSeconds: int
    finalizers: list[str]
    labels: dict[str, str]  # selectors, node type, group, replica index, serve label
    annotations: dict[str, str]
    ownerReferences: list[dict[str, Any]]  # owns() watches and the owner index


class PodContainer(TypedDict, total=False):
    name: str  # the Ray container of the terminal-Pod rule
    ports: list[dict[str, Any]]  # the head's serve and dashboard ports
    env: list[dict[str, Any]]  # only RAY_AUTH_* entries (RayService's dashboard token)


class PodSpec(TypedDict, total=False):
    restartPolicy: str  # terminal-Pod rule
    nodeName: str
    containers: list[PodContainer]


class ContainerStatus(TypedDict, total=False):
    name: str
    ready: bool
    started: bool
    restartCount: int
    state: dict[str, Any]  # HeadPodReady's reason (waiting/terminated)
    lastState: dict[str, Any]  # a restarted SidecarMode submitter (SidecarSubmitterRestart)


class PodStatus(TypedDict, total=False):
    phase: str
    podIP: str
    podIPs: list[dict[str, str]]
    hostIP: str
    startTime: str
    reason: str
    message: str
    # ``Ready``, and any other condition while it is not ``True`` (e.g. PodScheduled=False).
    conditions: list[dict[str, Any]]
    containerStatuses: list[ContainerStatus]


class SlimPod(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: PodMetadata
    spec: PodSpec
    status: PodStatus


def has_ready_condition(pod: Obj) -> bool:
    """The Pod's ``Ready`` condition is ``True`` (what the kubelet's probes say, nothing more)."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def is_running_and_ready(pod: Obj | None) -> bool:
    """Running, ``Ready=True`` and not being deleted (see the module's note on deletion)."""
    if pod is None or is_deleting(pod):
        return False
    return (pod.get("status") or {}).get("phase") == "Running" and has_ready_condition(pod)


def live_pods(pods: Iterable[Obj]) -> list[Obj]:
    """The Pods not being deleted (a terminating worker still counts towards its group's replicas:
    controllers.raycluster.scaling)."""
    return [pod for pod in pods if not is_deleting(pod)]
