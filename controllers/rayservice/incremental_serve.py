"""Serve on each cluster during an incremental upgrade: config submission and capacity steps.

KubeRay's rules (docs/reference/incremental-upgrade.md §5.2, §5.4): every submission carries the cluster's
``target_capacity`` from status; the old cluster never receives the new ``serveConfigV2`` while
the upgrade goes forward, nor the new cluster while it rolls back; a capacity step re-sends the
cluster's own config with a new ``target_capacity``.

Where this differs from KubeRay: a capacity step for a cluster whose config this process never
submitted (the operator restarted mid-upgrade) re-sends the applications the cluster reports
running (``deployed_app_config``), never the spec's new config, so the old cluster keeps its
old version; and ``UpdatedServeTargetCapacity`` is recorded only when a capacity PUT happened.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from controllers import constants as c
from controllers.api.rayservice import ServeConfigError, parse_serve_config
from controllers.common.heads import dashboard_client, head_pod
from controllers.common.pods import is_running_and_ready
from controllers.ray.dashboard import DashboardClient, DashboardClosed, DashboardError
from controllers.ray.serve_status import ServeDetails
from controllers.rayservice.context import ServiceContext
from controllers.rayservice.incremental_steps import Progress, capacity_step, capacity_update_needed
from controllers.rayservice.serve import application_statuses, needs_submit
from controllers.rayservice.serving import auth_token
from controllers.rayservice.shapes import ClusterRole
from kuberay_py.client import NotFound
from kuberay_py.log import get_logger
from kuberay_py.objects import Obj

__all__ = [
    "EVENT_FAILED_TO_UPDATE_TARGET_CAPACITY",
    "EVENT_UPDATED_SERVE_TARGET_CAPACITY",
    "ServeOutcome",
    "UpgradeState",
    "serve_cluster",
]

EVENT_UPDATED_SERVE_TARGET_CAPACITY = "UpdatedServeTargetCapacity"
EVENT_FAILED_TO_UPDATE_TARGET_CAPACITY = "FailedToUpdateTargetCapacity"
_STATUS_KEY = {"active": "activeServiceStatus", "pending": "pendingServiceStatus"}

log = get_logger(__name__)


@dataclass
class ServeOutcome:
    ready: bool = False  # at least one application and all RUNNING (as of the GET)
    apps: dict[str, Any] | None = None
    in_progress: bool = False  # poll again: applications deploying, or a PUT just went out


@dataclass
class UpgradeState:
    """What one reconcile decided before Serve runs: the mode and whether capacity may move."""

    upgrading: bool
    rollback: bool
    capacity_allowed: bool  # both clusters named, Gateway and HTTPRoute ready
    surge: int


async def serve_cluster(
    ctx: ServiceContext, cluster: Obj, side: ClusterRole, state: UpgradeState
) -> ServeOutcome:
    """Read Serve's status on ``cluster``; submit its config and take a capacity step when due."""
    status = cast(dict[str, Any], ctx.status)
    name = cluster["metadata"]["name"]
    pod = head_pod(ctx.deps.cache, ctx.ref.namespace, name)
    if pod is None or not is_running_and_ready(pod):
        return ServeOutcome()  # the head Pod's status change wakes us up
    try:
        dashboard = dashboard_client(ctx.dashboards, pod, cluster, await auth_token(ctx, pod))
        details = await dashboard.get_serve_details()
    except DashboardClosed:
        return ServeOutcome(in_progress=True)
    except (DashboardError, ValueError, NotFound) as exc:
        log.warning("failed to get Serve application statuses", cluster=name, error=str(exc))
        return ServeOutcome(in_progress=True)
    sub = status.setdefault(_STATUS_KEY[side], {})
    skip = (side == "active" and state.upgrading and not state.rollback) or (
        side == "pending" and state.rollback
    )
    config_text = (ctx.svc.get("spec") or {}).get("serveConfigV2") or ""
    submitted = False
    if not skip and config_text:
        submit, why = needs_submit(ctx.memory.serve_configs.get(ctx.ref.key, name), config_text, details)
        if submit:
            submitted = await _put(ctx, dashboard, cluster, config_text, None, sub.get("targetCapacity"), why)
    stepped = False
    if state.upgrading and state.capacity_allowed:
        stepped = await _capacity_step(ctx, cluster, side, state, dashboard, details)
    ready = details.all_running and not submitted
    in_progress = not details.all_running or submitted or stepped
    return ServeOutcome(ready=ready, apps=application_statuses(details), in_progress=in_progress)


async def _capacity_step(
    ctx: ServiceContext,
    cluster: Obj,
    side: ClusterRole,
    state: UpgradeState,
    dashboard: DashboardClient,
    details: ServeDetails,
) -> bool:
    status = cast(dict[str, Any], ctx.status)
    active = status.setdefault("activeServiceStatus", {})
    pending = status.setdefault("pendingServiceStatus", {})
    progress = Progress.of(status)
    if not capacity_update_needed(progress, rollback=state.rollback):
        return False
    if progress.active_tc is None or progress.pending_tc is None:
        active.setdefault("targetCapacity", 100)
        pending.setdefault("targetCapacity", 0)
        progress = Progress.of(status)
    goal = capacity_step(side, progress, surge=state.surge, rollback=state.rollback)
    current = progress.active_tc if side == "active" else progress.pending_tc
    if goal is None or goal == current:
        return False
    name = cluster["metadata"]["name"]
    cached = ctx.memory.serve_configs.get(ctx.ref.key, name)
    body = _running_config(details) if not cached and side == "active" and not state.rollback else None
    text = cached or (ctx.svc.get("spec") or {}).get("serveConfigV2") or ""
    if details.target_capacity == goal:  # already applied (e.g. before a restart lost the status write)
        ok = True
    else:
        ok = await _put(ctx, dashboard, cluster, text, body, goal, f"target_capacity {current} -> {goal}")
    if ok:
        (active if side == "active" else pending)["targetCapacity"] = goal
        ctx.deps.recorder.event(
            ctx.svc,
            c.NORMAL,
            EVENT_UPDATED_SERVE_TARGET_CAPACITY,
            f"Updated target_capacity of serve applications to {goal} on the RayCluster "
            f"{ctx.ref.namespace}/{name}",
        )
    return ok


def _running_config(details: ServeDetails) -> dict[str, Any] | None:
    """The applications the cluster runs, as last PUT (Ray echoes each entry)."""
    if not details.deployed_configs:
        return None
    return {"applications": list(details.deployed_configs.values())}


async def _put(
    ctx: ServiceContext,
    dashboard: DashboardClient,
    cluster: Obj,
    text: str,
    body: dict[str, Any] | None,
    target_capacity: int | None,
    why: str,
) -> bool:
    """PUT a config with ``target_capacity`` set; a full submission of ``text`` is remembered."""
    name = cluster["metadata"]["name"]
    ref = f"{cluster['metadata']['namespace']}/{name}"
    capacity_step_put = body is not None or why.startswith("target_capacity")
    try:
        doc = dict(body) if body is not None else parse_serve_config(text)
        if target_capacity is not None:
            doc["target_capacity"] = target_capacity
        await dashboard.put_serve_applications(doc)
    except DashboardClosed:
        return False
    except (DashboardError, ServeConfigError) as exc:
        if capacity_step_put:
            message = f"Failed to update target_capacity of serve applications to the RayCluster {ref}: {exc}"
            ctx.warn(EVENT_FAILED_TO_UPDATE_TARGET_CAPACITY, message)
        else:
            ctx.warn(
                c.EVENT_FAILED_TO_UPDATE_SERVE_APPLICATIONS,
                f"Failed to update serve applications to the RayCluster {ref}: {exc}",
            )
        return False
    log.info("submitted serve config", cluster=ref, reason=why, target_capacity=target_capacity)
    configs = ctx.memory.serve_configs
    if body is None and not capacity_step_put:
        configs.put(ctx.ref.key, name, text)
        ctx.deps.recorder.event(
            ctx.svc,
            c.NORMAL,
            c.EVENT_UPDATED_SERVE_APPLICATIONS,
            f"Updated serve applications to the RayCluster {ref}",
        )
    elif body is None and not configs.get(ctx.ref.key, name):
        configs.put(ctx.ref.key, name, text)
    return True
