"""The step rules of ``NewClusterWithIncrementalUpgrade``, pure.

KubeRay's rules: docs/reference/incremental-upgrade.md §5 and §7.

Two quantities move, one step at a time: each cluster's Serve ``target_capacity`` (how many of
its configured replicas run) and each cluster's HTTPRoute weight (how much traffic it gets).
They take turns so that traffic never goes to capacity that is not there and the two clusters
together never run more than ``100 + maxSurgePercent`` percent:

* forward: the pending cluster B grows by ``maxSurgePercent`` once its traffic caught up with its
  capacity and the sum allows; traffic then moves to B by ``stepSizePercent`` every
  ``intervalSeconds``, up to B's capacity; the active cluster A shrinks by ``maxSurgePercent``
  once the sum exceeds 100; B is promoted when A is at 0 and B has all the traffic;
* rollback (the goal went back to A's spec, or to a third one): the mirror image, B first.

The rules read the status the previous reconcile wrote, as KubeRay's do, so a restarted
operator continues from the persisted values.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from controllers.rayservice.shapes import ClusterRole
from kuberay_py.clock import parse_rfc3339

__all__ = [
    "Progress",
    "capacity_step",
    "capacity_update_needed",
    "next_traffic_step_at",
    "rollback_complete",
    "should_promote",
    "traffic_step",
]


@dataclass
class Progress:
    """The six incremental fields of ``activeServiceStatus`` / ``pendingServiceStatus``."""

    active_tc: int | None = None
    pending_tc: int | None = None
    active_trp: int | None = None
    pending_trp: int | None = None
    active_ltmt: datetime | None = None
    pending_ltmt: datetime | None = None

    @classmethod
    def of(cls, status: dict[str, Any]) -> Progress:
        active = status.get("activeServiceStatus") or {}
        pending = status.get("pendingServiceStatus") or {}
        return cls(
            active.get("targetCapacity"),
            pending.get("targetCapacity"),
            active.get("trafficRoutedPercent"),
            pending.get("trafficRoutedPercent"),
            parse_rfc3339(active.get("lastTrafficMigratedTime")),
            parse_rfc3339(pending.get("lastTrafficMigratedTime")),
        )


def capacity_update_needed(p: Progress, *, rollback: bool) -> bool:
    """KubeRay's checkIfNeedTargetCapacityUpdate after its cluster and Gateway checks (4-6)."""
    if None in (p.active_tc, p.active_trp, p.pending_tc, p.pending_trp):
        return True
    if rollback:
        return not (p.active_tc == 100 and p.pending_tc == 0)
    return not (p.active_tc == 0 and p.pending_tc == 100)


def capacity_step(side: ClusterRole, p: Progress, *, surge: int, rollback: bool) -> int | None:
    """The new ``target_capacity`` of ``side``, or None when it does not move this pass.

    Missing capacities count as A 100 / B 0 and missing traffic as 0, as in KubeRay.
    """
    a_tc = 100 if p.active_tc is None else p.active_tc
    b_tc = 0 if p.pending_tc is None else p.pending_tc
    a_trp = p.active_trp or 0
    b_trp = p.pending_trp or 0
    total = a_tc + b_tc
    if not rollback:
        if b_tc != b_trp:
            return None  # traffic has not caught up with B's capacity yet
        if side == "pending" and total <= 100:
            return min(100, b_tc + surge)
        if side == "active" and total > 100:
            return max(0, a_tc - surge)
        return None
    if a_tc != a_trp:
        return None
    if side == "pending" and total > 100:
        return max(0, b_tc - surge)
    if side == "active" and total <= 100:
        return min(100, a_tc + surge)
    return None


def _interval_elapsed(since: datetime | None, now: datetime, interval: int) -> bool:
    return since is None or (now - since) >= timedelta(seconds=interval)


def traffic_step(
    p: Progress, *, step: int, interval: int, now: datetime, pending_ready: bool, rollback: bool
) -> tuple[int, int]:
    """KubeRay's calculateTrafficRoutedPercent: the (active, pending) weights for this pass."""
    aw = 100 if p.active_trp is None else p.active_trp
    pw = 0 if p.pending_trp is None else p.pending_trp
    a_tc = 100 if p.active_tc is None else p.active_tc
    b_tc = 0 if p.pending_tc is None else p.pending_tc
    if (not rollback and pw == b_tc) or (rollback and aw == a_tc):
        return aw, pw
    since = p.active_ltmt if rollback else p.pending_ltmt
    if not _interval_elapsed(since, now, interval):
        return aw, pw
    if rollback:
        aw = min(100, aw + step, a_tc)
        return aw, 100 - aw
    if not pending_ready:
        return aw, pw  # pausing traffic migration until B's applications run
    pw = min(100, pw + step, b_tc)
    return 100 - pw, pw


def next_traffic_step_at(p: Progress, *, interval: int, rollback: bool) -> datetime | None:
    """When the next traffic step may happen (the step timer), or None when traffic waits on capacity."""
    aw = 100 if p.active_trp is None else p.active_trp
    pw = 0 if p.pending_trp is None else p.pending_trp
    a_tc = 100 if p.active_tc is None else p.active_tc
    b_tc = 0 if p.pending_tc is None else p.pending_tc
    if (not rollback and pw == b_tc) or (rollback and aw == a_tc):
        return None
    since = p.active_ltmt if rollback else p.pending_ltmt
    return None if since is None else since + timedelta(seconds=interval)


def should_promote(p: Progress) -> bool:
    """Forward completion: A runs nothing and B has all the traffic."""
    return p.active_tc == 0 and p.pending_trp == 100


def rollback_complete(p: Progress, *, pending_healthy: bool) -> bool:
    """KubeRay's shouldCompleteIncrementalRollback."""
    if p.active_tc != 100 or p.active_trp != 100:
        return False
    return not pending_healthy or (p.pending_tc == 0 and (p.pending_trp or 0) == 0)
