"""What "ready" means for each kind the demo applies, and one-line state summaries for the console.

Kept pure (object in, verdict out) so the demo's waiting loop and its tests agree on readiness.
"""

from __future__ import annotations

from typing import Any

__all__ = ["is_ready", "summary"]


def _conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    status = obj.get("status") or {}
    return {c.get("type", ""): c for c in status.get("conditions") or [] if isinstance(c, dict)}


def is_ready(obj: dict[str, Any]) -> bool:
    """RayCluster: ``state: ready``. RayService: ``Ready=True`` (KubeRay's condition). RayJob:
    ``jobDeploymentStatus: Complete``. Others: exist."""
    kind = obj.get("kind")
    status = obj.get("status") or {}
    if kind == "RayCluster":
        return status.get("state") == "ready"
    if kind == "RayService":
        ready = _conditions(obj).get("Ready")
        return ready is not None and ready.get("status") == "True"
    if kind == "RayJob":
        return status.get("jobDeploymentStatus") == "Complete"
    return True


def summary(obj: dict[str, Any]) -> str:
    """A stable one-line description, printed only when it changes."""
    kind = obj.get("kind", "?")
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    name = f"{kind.lower()}/{meta.get('name', '?')}"
    if kind == "RayCluster":
        return (
            f"{name}: state={status.get('state') or 'pending'} "
            f"workers={status.get('readyWorkerReplicas', 0)}/{status.get('desiredWorkerReplicas', 0)}"
            + (f" reason={status['reason']}" if status.get("reason") else "")
        )
    if kind == "RayService":
        ready = _conditions(obj).get("Ready") or {}
        active = (status.get("activeServiceStatus") or {}).get("rayClusterName") or "-"
        pending = (status.get("pendingServiceStatus") or {}).get("rayClusterName") or "-"
        return (
            f"{name}: ready={ready.get('status', 'Unknown')} ({ready.get('reason', 'Initializing')}) "
            f"endpoints={status.get('numServeEndpoints', 0)} active={active} pending={pending}"
        )
    if kind == "RayJob":
        return (
            f"{name}: deployment={status.get('jobDeploymentStatus') or 'New'} "
            f"job={status.get('jobStatus') or '-'} cluster={status.get('rayClusterName') or '-'}"
        )
    return f"{name}: applied"
