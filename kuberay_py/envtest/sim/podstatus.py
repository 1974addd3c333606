"""Building a Pod's status the way the kubelet reports it (``pkg/kubelet/status/generate.go``).

The kubelet owns the phase, addresses, container statuses and five condition types; any other
condition (a readiness gate, ``DisruptionTarget``) belongs to someone else and is carried over
untouched. ``lastTransitionTime`` only moves when a condition's status changes, so rewriting an
unchanged status is a no-op and the kubelet can skip the write entirely.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

__all__ = ["KUBELET_CONDITIONS", "ContainerState", "build_status"]

KUBELET_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")


@dataclass
class ContainerState:
    """What the simulated container runtime knows about one container."""

    name: str
    image: str
    started_at: str
    restart_count: int = 0
    ready: bool = False
    started: bool = True
    running: bool = True
    exit_code: int = 0
    last_termination: dict[str, Any] | None = field(default=None)
    waiting_reason: str = ""
    waiting_message: str = ""

    def to_api(self, pod_uid: str) -> dict[str, Any]:
        state: dict[str, Any]
        if self.waiting_reason:
            state = {"waiting": {"reason": self.waiting_reason, "message": self.waiting_message}}
        elif self.running:
            state = {"running": {"startedAt": self.started_at}}
        else:
            state = {
                "terminated": {
                    "exitCode": self.exit_code,
                    "reason": "Completed" if self.exit_code == 0 else "Error",
                    "startedAt": self.started_at,
                    "finishedAt": self.started_at,
                    "containerID": self.container_id(pod_uid),
                }
            }
        return {
            "name": self.name,
            "state": state,
            "lastState": {"terminated": self.last_termination} if self.last_termination else {},
            "ready": self.ready and self.running and not self.waiting_reason,
            "restartCount": self.restart_count,
            "image": self.image,
            "imageID": f"sim://{self.image}",
            "containerID": self.container_id(pod_uid),
            "started": self.started and self.running and not self.waiting_reason,
        }

    def container_id(self, pod_uid: str) -> str:
        return f"sim://{pod_uid}/{self.name}/{self.restart_count}"


def _condition(
    old: dict[str, dict[str, Any]], type_: str, status: bool, now: str, reason: str = "", message: str = ""
) -> dict[str, Any]:
    value = "True" if status else "False"
    previous = old.get(type_)
    cond: dict[str, Any] = {"type": type_, "status": value, "lastProbeTime": None}
    if previous is not None and previous.get("status") == value:
        cond["lastTransitionTime"] = previous.get("lastTransitionTime") or now
    else:
        cond["lastTransitionTime"] = now
    if reason and not status:
        cond["reason"] = reason
    if message and not status:
        cond["message"] = message
    return cond


def build_status(
    pod: dict[str, Any],
    *,
    pod_ip: str,
    host_ip: str,
    start_time: str,
    containers: list[ContainerState],
    now: str,
    phase: str | None = None,
) -> dict[str, Any]:
    """The full status the kubelet would write for ``pod`` given its containers' state."""
    status = copy.deepcopy(pod.get("status") or {})
    old = {c.get("type", ""): c for c in status.get("conditions") or []}
    uid = pod.get("metadata", {}).get("uid", "")
    spec = pod.get("spec") or {}

    unready = [c.name for c in containers if not (c.ready and c.running and not c.waiting_reason)]
    containers_ready = not unready
    gates = [g.get("conditionType") for g in spec.get("readinessGates") or []]
    gates_missing = [g for g in gates if (old.get(g or "") or {}).get("status") != "True"]
    ready = containers_ready and not gates_missing
    if not containers_ready:
        ready_reason, ready_msg = (
            "ContainersNotReady",
            f"containers with unready status: [{' '.join(unready)}]",
        )
    elif gates_missing:
        ready_reason = "ReadinessGatesNotReady"
        ready_msg = f"corresponding condition of pod readiness gate {gates_missing[0]!r} does not exist."
        if gates_missing[0] in old:
            ready_msg = f'the status of pod readiness gate {gates_missing[0]!r} is not "True"'
    else:
        ready_reason = ready_msg = ""

    ours = [
        _condition(old, "PodReadyToStartContainers", True, now),
        _condition(old, "Initialized", True, now),
        _condition(old, "Ready", ready, now, ready_reason, ready_msg if not ready else ""),
        _condition(
            old,
            "ContainersReady",
            containers_ready,
            now,
            "ContainersNotReady",
            f"containers with unready status: [{' '.join(unready)}]",
        ),
        _condition(old, "PodScheduled", True, now),
    ]
    others = [c for c in status.get("conditions") or [] if c.get("type") not in KUBELET_CONDITIONS]
    status["conditions"] = ours + others

    if phase is None:
        if all(not c.running and not c.waiting_reason for c in containers) and containers:
            phase = "Succeeded" if all(c.exit_code == 0 for c in containers) else "Failed"
        else:
            phase = "Running"
    status["phase"] = phase
    status["hostIP"] = host_ip
    status["hostIPs"] = [{"ip": host_ip}]
    status["podIP"] = pod_ip
    status["podIPs"] = [{"ip": pod_ip}]
    status["startTime"] = status.get("startTime") or start_time
    status["containerStatuses"] = [c.to_api(uid) for c in containers]
    init = spec.get("initContainers") or []
    if init:
        status["initContainerStatuses"] = [
            {
                "name": c.get("name", ""),
                "state": {
                    "terminated": {
                        "exitCode": 0,
                        "reason": "Completed",
                        "startedAt": start_time,
                        "finishedAt": start_time,
                        "containerID": f"sim://{uid}/{c.get('name', '')}/0",
                    }
                },
                "lastState": {},
                "ready": True,
                "restartCount": 0,
                "image": c.get("image", ""),
                "imageID": f"sim://{c.get('image', '')}",
                "containerID": f"sim://{uid}/{c.get('name', '')}/0",
                "started": False,
            }
            for c in init
        ]
    return status
