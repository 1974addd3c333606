"""Phases that manage the RayService's RayClusters: create, update in place, delete when dangling."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

from controllers import constants as c
from controllers.constants import RAYCLUSTERS
from controllers.rayservice.cluster import (
    DELETION_DEADLINE_ANNOTATION_KEY,
    build_ray_cluster,
    cluster_spec_of,
    owned_cluster_labels,
)
from controllers.rayservice.hashing import (
    should_update_cluster,
)
from controllers.rayservice.phase_base import (
    DEFAULT_DELETION_DELAY,
    PhaseBase,
    RequeueTimer,
    _cluster_names,
    _name,
    log,
)
from controllers.rayservice.status import (
    is_condition_true,
    rfc3339,
)
from kuberay_py.client import AlreadyExists, NotFound
from kuberay_py.clock import parse_rfc3339

__all__ = ["ClusterPhases"]


class ClusterPhases(PhaseBase):
    async def _clean_up_dangling_clusters(
        self, svc: dict[str, Any], status: dict[str, Any], requeue: RequeueTimer
    ) -> None:
        """Delete clusters that are neither active nor pending once their deadline passed.

        The deadline is an annotation on the cluster, so it survives an operator restart.
        """
        meta = svc["metadata"]
        keep = set(_cluster_names(status))
        delay = (svc.get("spec") or {}).get("rayClusterDeletionDelaySeconds")
        delay_s = DEFAULT_DELETION_DELAY if delay is None else float(delay)
        now = self.clock.utcnow()
        for cluster in self.cache.list(RAYCLUSTERS, meta["namespace"], labels=owned_cluster_labels(svc)):
            cmeta = cluster["metadata"]
            if cmeta["name"] in keep or cmeta.get("deletionTimestamp"):
                continue
            deadline = parse_rfc3339((cmeta.get("annotations") or {}).get(DELETION_DEADLINE_ANNOTATION_KEY))
            if deadline is None:
                deadline = now + timedelta(seconds=delay_s)
                patch = {"metadata": {"annotations": {DELETION_DEADLINE_ANNOTATION_KEY: rfc3339(deadline)}}}
                try:
                    await self.client.patch(RAYCLUSTERS, cmeta["name"], patch, cmeta["namespace"])
                except NotFound:
                    continue
                log.info(
                    "scheduled dangling RayCluster for deletion",
                    cluster=cmeta["name"],
                    deadline=rfc3339(deadline),
                )
            if now >= deadline:
                await self._delete_cluster(svc, cluster)
            else:
                requeue.at((deadline - now).total_seconds())

    async def _delete_cluster(self, svc: dict[str, Any], cluster: dict[str, Any]) -> None:
        cmeta = cluster["metadata"]
        try:
            await self.client.delete(
                RAYCLUSTERS, cmeta["name"], cmeta["namespace"], propagation_policy="Background"
            )
        except NotFound:
            return
        except Exception as exc:
            self.recorder.event(
                svc,
                c.WARNING,
                c.EVENT_FAILED_TO_DELETE_RAYCLUSTER,
                f"Failed to delete the RayCluster {cmeta['namespace']}/{cmeta['name']}: {exc}",
            )
            raise
        self.recorder.event(
            svc,
            c.NORMAL,
            c.EVENT_DELETED_RAYCLUSTER,
            f"Deleted the RayCluster {cmeta['namespace']}/{cmeta['name']}",
        )

    async def _reconcile_clusters(
        self, svc: dict[str, Any], status: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        ns = svc["metadata"]["namespace"]
        active_name, pending_name = _name(status, "active"), _name(status, "pending")
        active = self.cache.get(RAYCLUSTERS, active_name, ns) if active_name else None
        pending = self.cache.get(RAYCLUSTERS, pending_name, ns) if pending_name else None
        if pending_name and pending is None:
            return active, await self._create_cluster(svc, pending_name)
        goal = cluster_spec_of(svc)
        upgrading = is_condition_true(status.get("conditions"), c.COND_UPGRADE_IN_PROGRESS)
        if should_update_cluster(active, goal, is_active=True, upgrade_in_progress=upgrading):
            assert active is not None
            active = await self._update_cluster(svc, active, "active")
        if should_update_cluster(pending, goal, is_active=False, upgrade_in_progress=upgrading):
            assert pending is not None
            pending = await self._update_cluster(svc, pending, "pending")
        return active, pending

    async def _create_cluster(self, svc: dict[str, Any], name: str) -> dict[str, Any]:
        body = build_ray_cluster(svc, name)
        ns = svc["metadata"]["namespace"]
        try:
            created: dict[str, Any] = await self.client.create(RAYCLUSTERS, body, ns)
        except AlreadyExists:
            existing: dict[str, Any] = await self.client.get(RAYCLUSTERS, name, ns)
            return existing
        except Exception as exc:
            self.recorder.event(
                svc,
                c.WARNING,
                c.EVENT_FAILED_TO_CREATE_RAYCLUSTER,
                f"Failed to create the RayCluster {ns}/{name}: {exc}",
            )
            raise
        self.recorder.event(svc, c.NORMAL, c.EVENT_CREATED_RAYCLUSTER, f"Created the RayCluster {ns}/{name}")
        return created

    async def _update_cluster(
        self, svc: dict[str, Any], cluster: dict[str, Any], role: str
    ) -> dict[str, Any]:
        """KubeRay's modifyRayCluster: the goal spec, labels and annotations; ``suspend`` is kept."""
        goal = build_ray_cluster(svc, cluster["metadata"]["name"])
        body = copy.deepcopy(cluster)
        suspend = (cluster.get("spec") or {}).get("suspend")
        body["spec"] = goal["spec"]
        if suspend is not None:
            body["spec"]["suspend"] = suspend
        body["metadata"]["labels"] = goal["metadata"]["labels"]
        body["metadata"]["annotations"] = goal["metadata"]["annotations"]
        ref = f"{cluster['metadata']['namespace']}/{cluster['metadata']['name']}"
        try:
            updated: dict[str, Any] = await self.client.update(RAYCLUSTERS, body)
        except Exception as exc:
            msg = f"Failed to update the {role} RayCluster {ref}: {exc}"
            self.recorder.event(svc, c.WARNING, c.EVENT_FAILED_TO_UPDATE_RAYCLUSTER, msg)
            raise
        self.recorder.event(svc, c.NORMAL, c.EVENT_UPDATED_RAYCLUSTER, f"Updated the {role} RayCluster {ref}")
        return updated
