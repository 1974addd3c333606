"""Status conditions with apimachinery's ``meta.SetStatusCondition`` rules, for every controller.

A condition's ``lastTransitionTime`` moves only when its status flips; reason and message follow
every set. RayCluster conditions carry no ``observedGeneration`` (KubeRay sets none), RayService
and RayJob ones do: the one :func:`set_condition` writes it only when given.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

__all__ = [
    "Condition",
    "ConditionStatus",
    "as_condition_status",
    "find_condition",
    "is_condition_true",
    "remove_condition",
    "set_condition",
]

ConditionStatus = Literal["True", "False", "Unknown"]


class Condition(TypedDict):
    """``metav1.Condition`` as it is stored in a status."""

    type: str
    status: ConditionStatus
    reason: str
    message: str
    lastTransitionTime: str
    observedGeneration: NotRequired[int]


def as_condition_status(value: object) -> ConditionStatus:
    """A status read from another object (a Pod's condition): the API only allows these three."""
    if value == "True":
        return "True"
    if value == "False":
        return "False"
    return "Unknown"


def find_condition(conditions: list[Condition] | None, type_: str) -> Condition | None:
    return next((cond for cond in conditions or [] if cond.get("type") == type_), None)


def is_condition_true(conditions: list[Condition] | None, type_: str) -> bool:
    cond = find_condition(conditions, type_)
    return cond is not None and cond.get("status") == "True"


def set_condition(
    conditions: list[Condition],
    type_: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    *,
    now: str,
    observed_generation: int | None = None,
) -> None:
    """Add or update the condition ``type_``; ``now`` is an RFC 3339 timestamp."""
    current = find_condition(conditions, type_)
    if current is None:
        current = {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": now,
        }
        conditions.append(current)
    elif current.get("status") != status:
        current["status"] = status
        current["lastTransitionTime"] = now
    current["reason"] = reason
    current["message"] = message
    if observed_generation is not None:
        current["observedGeneration"] = observed_generation


def remove_condition(conditions: list[Condition], type_: str) -> None:
    conditions[:] = [cond for cond in conditions if cond.get("type") != type_]
