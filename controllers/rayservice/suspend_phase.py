"""RayService ``spec.suspend``: tear the serving stack down and bring it back (KubeRay §3.1 step 5).

Suspending: ``Suspending=True`` (SuspendRequested, then SuspendInProgress), the cluster names and
endpoint count cleared, every owned RayCluster and Service deleted at once (no deletion delay).
When none is left: ``Suspending=False`` and ``Suspended=True`` (SuspendComplete). Setting
``suspend: false`` again: ``Suspended=False`` (RayServiceResumed), ``Ready`` and
``UpgradeInProgress`` back to Initializing, and the normal flow prepares a fresh cluster. The
deletions come back through the ``owns`` watches, so nothing polls.
"""

from __future__ import annotations

from typing import Any

from controllers import constants as c
from controllers.constants import RAYCLUSTERS
from controllers.rayservice.cluster import owned_cluster_labels
from controllers.rayservice.cluster_phases import ClusterPhases
from controllers.rayservice.status import is_condition_true, set_condition
from kuberay_py.client import NotFound
from kuberay_py.client.resources import SERVICES

__all__ = ["SuspendPhase"]


class SuspendPhase(ClusterPhases):
    async def _suspend(self, svc: dict[str, Any], status: dict[str, Any], generation: int) -> bool:
        """One step of suspending; True once everything is gone."""
        now = self.clock.utcnow()
        conditions = status.setdefault("conditions", [])
        reason = (
            c.REASON_SUSPEND_IN_PROGRESS
            if is_condition_true(conditions, c.COND_RAYSERVICE_SUSPENDING)
            else c.REASON_SUSPEND_REQUESTED
        )
        if is_condition_true(conditions, c.COND_RAYSERVICE_SUSPENDED):
            return True
        set_condition(
            conditions,
            c.COND_RAYSERVICE_SUSPENDING,
            "True",
            reason,
            "Suspending the RayService",
            observed_generation=generation,
            now=now,
        )
        status["activeServiceStatus"] = {}
        status["pendingServiceStatus"] = {}
        status["numServeEndpoints"] = 0
        status["serviceStatus"] = ""
        if is_condition_true(conditions, c.COND_RAYSERVICE_READY):
            set_condition(
                conditions,
                c.COND_RAYSERVICE_READY,
                "False",
                c.REASON_ZERO_SERVE_ENDPOINTS,
                "The RayService is suspended",
                observed_generation=generation,
                now=now,
            )
        ns = svc["metadata"]["namespace"]
        self.serve_configs.drop(f"{ns}/{svc['metadata']['name']}")
        remaining = 0
        for cluster in self.cache.list(RAYCLUSTERS, ns, labels=owned_cluster_labels(svc)):
            remaining += 1
            if not cluster["metadata"].get("deletionTimestamp"):
                await self._delete_cluster(svc, cluster)
        for service in self.cache.list(SERVICES, ns, labels=owned_cluster_labels(svc)):
            owner = [r for r in service["metadata"].get("ownerReferences") or [] if r.get("controller")]
            if not owner or owner[0].get("uid") != svc["metadata"].get("uid"):
                continue
            remaining += 1
            if not service["metadata"].get("deletionTimestamp"):
                try:
                    await self.client.delete(SERVICES, service["metadata"]["name"], ns)
                except NotFound:
                    continue
                self.recorder.event(
                    svc, c.NORMAL, "DeletedService", f"Deleted the service {ns}/{service['metadata']['name']}"
                )
        if remaining:
            return False
        set_condition(
            conditions,
            c.COND_RAYSERVICE_SUSPENDING,
            "False",
            c.REASON_SUSPEND_COMPLETE,
            "The RayService is suspended",
            observed_generation=generation,
            now=now,
        )
        set_condition(
            conditions,
            c.COND_RAYSERVICE_SUSPENDED,
            "True",
            c.REASON_SUSPEND_COMPLETE,
            "The RayService is suspended",
            observed_generation=generation,
            now=now,
        )
        return True

    def _resume(self, status: dict[str, Any], generation: int) -> None:
        """``suspend: false`` after a suspension: re-arm the conditions, the normal flow takes over."""
        conditions = status.setdefault("conditions", [])
        if not is_condition_true(conditions, c.COND_RAYSERVICE_SUSPENDED) and not is_condition_true(
            conditions, c.COND_RAYSERVICE_SUSPENDING
        ):
            return
        now = self.clock.utcnow()
        for type_, value, reason in (
            (c.COND_RAYSERVICE_SUSPENDING, "False", c.REASON_RAYSERVICE_RESUMED),
            (c.COND_RAYSERVICE_SUSPENDED, "False", c.REASON_RAYSERVICE_RESUMED),
            (c.COND_RAYSERVICE_READY, "False", c.REASON_INITIALIZING),
            (c.COND_UPGRADE_IN_PROGRESS, "False", c.REASON_INITIALIZING),
        ):
            message = (
                "The RayService was resumed"
                if reason == c.REASON_RAYSERVICE_RESUMED
                else "RayService is initializing"
            )
            set_condition(conditions, type_, value, reason, message, observed_generation=generation, now=now)
