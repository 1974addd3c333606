"""The RayJob status: counters and times on a transition, one write only when it changed, metrics.

KubeRay persists only when certain fields change (a message alone rides along later, §1.4); we
write whenever anything the user can read changed, and never an unchanged status. The mirrored
``rayClusterStatus`` counts only through KubeRay's significant fields, so a RayCluster status
write that moves only ``lastUpdateTime`` costs no RayJob write.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from controllers import constants as C
from controllers.common.cluster import SIGNIFICANT_FIELDS
from controllers.rayjob.context import JobContext
from controllers.rayjob.metrics import observe_transition
from controllers.rayjob.shapes import TERMINAL_DEPLOYMENT_STATUSES, JobDeploymentStatus
from kuberay_py.client import Conflict, NotFound
from kuberay_py.objects import Obj

__all__ = ["SIGNIFICANT_CLUSTER_FIELDS", "apply_transition_rules", "status_differs", "write_status"]

SIGNIFICANT_CLUSTER_FIELDS = SIGNIFICANT_FIELDS  # the RayCluster status a RayJob mirrors
TERMINAL = TERMINAL_DEPLOYMENT_STATUSES
_NOT_RETRIED = ("DeadlineExceeded", "JobStatusCheckTimeoutExceeded")


def _comparable(status: Mapping[str, Any] | None) -> dict[str, Any]:
    out = dict(status or {})
    cluster = out.pop("rayClusterStatus", None) or {}
    out["rayClusterStatus"] = {k: cluster.get(k) for k in SIGNIFICANT_CLUSTER_FIELDS if k in cluster}
    for counter in ("succeeded", "failed"):
        out.setdefault(counter, 0)
    return {k: v for k, v in out.items() if v not in (None, "", {}, [])}


def status_differs(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    return _comparable(old) != _comparable(new)


def apply_transition_rules(ctx: JobContext, old_state: JobDeploymentStatus) -> None:
    """Counters, ``endTime``, the retry rule and the duration metric for this pass's transition."""
    st = ctx.status
    st.setdefault("succeeded", 0)
    st.setdefault("failed", 0)
    new_state = ctx.state
    if new_state == old_state:
        return
    if new_state == "Failed":
        st["failed"] = int(st["failed"]) + 1
    elif new_state == "Complete" and st.get("jobStatus") == "SUCCEEDED":
        st["succeeded"] = int(st["succeeded"]) + 1
    limit = ctx.spec.get("backoffLimit")
    if (
        new_state == "Failed"
        and limit is not None
        and int(st["failed"]) < int(limit) + 1
        and st.get("reason") not in _NOT_RETRIED
    ):
        ctx.transitions.append(("Failed", "Retrying"))
        st["jobDeploymentStatus"] = new_state = "Retrying"
    if new_state in TERMINAL and old_state not in TERMINAL:
        st["endTime"] = ctx.now_text()
    if old_state not in TERMINAL and new_state in (*TERMINAL, "Retrying"):
        observe_transition(ctx, new_state)


async def write_status(ctx: JobContext) -> Obj | None:
    """Write ``ctx.status`` through the status subresource if it differs; the API's answer."""
    if not status_differs(ctx.job.get("status"), ctx.status):
        return None
    body = copy.deepcopy(ctx.job)
    body["status"] = ctx.status
    try:
        written: Obj = await ctx.deps.client.update_status(C.RAYJOBS, body)
    except NotFound:
        return None
    except Conflict:
        ctx.requeue.immediately()  # someone else wrote: start again from their version
        return None
    return written
