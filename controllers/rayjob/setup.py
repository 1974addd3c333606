"""Wiring the RayJob controller into a manager.

Watches: ``for_(RayJob)`` on generation, label, annotation and deletion changes (our own status
writes wake nothing); ``owns`` RayCluster (its readiness and status), the submitter batch/v1 Job
(its Complete/Failed conditions) and the ``<rayjob>-head-svc`` Service; and RayClusters mapped to
the RayJobs whose ``clusterSelector`` names them (a selected cluster appearing or becoming ready
wakes the job). The submitter Job is in the manager's Job cache through its
``app.kubernetes.io/created-by=kuberay-operator`` label (the cache selector both controllers use).

A new watch goes here; what a reconcile does with it goes in a phase module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from controllers import constants as C
from controllers.common.dashboards import close_with_manager
from controllers.common.predicates import spec_labels_annotations_or_deletion
from controllers.common.scope import deps_from
from controllers.ray.dashboard import DashboardClientFactory
from controllers.rayjob.options import RayJobOptions
from controllers.rayjob.reconciler import RayJobReconciler
from kuberay_py.client.resources import JOBS, PODS, SERVICES
from kuberay_py.clock import Clock
from kuberay_py.controller import (
    Request,
)

if TYPE_CHECKING:
    from kuberay_py.manager.manager import Manager

__all__ = ["CONTROLLER_NAME", "setup"]

CONTROLLER_NAME = "rayjob-controller"


def setup(
    manager: Manager,
    *,
    dashboard_factory: DashboardClientFactory | None = None,
    options: RayJobOptions | None = None,
    max_concurrent_reconciles: int = 4,
    clock: Clock | None = None,
) -> RayJobReconciler:
    """Register the RayJob controller with a :class:`kuberay_py.manager.Manager`."""
    dashboards = dashboard_factory or DashboardClientFactory()
    options = options or RayJobOptions.from_env()
    reconciler = RayJobReconciler(deps_from(manager, CONTROLLER_NAME, options, clock=clock), dashboards)
    cache = manager.cache
    # Head Pods are read (dashboard address, sidecar submitter state) from the shared Pod cache:
    # make sure its informer exists, so the manager waits for it to sync before reconciling.
    cache.informer_for(PODS)

    def selected_cluster_to_jobs(cluster: Mapping[str, Any]) -> list[Request]:
        meta = cluster.get("metadata") or {}
        name, ns = meta.get("name"), meta.get("namespace", "")
        return [
            Request(ns, job["metadata"]["name"])
            for job in cache.list(C.RAYJOBS, ns)
            if ((job.get("spec") or {}).get("clusterSelector") or {}).get(C.RAY_CLUSTER_LABEL_KEY) == name
        ]

    primary = spec_labels_annotations_or_deletion()
    (
        manager.controller(CONTROLLER_NAME)
        .for_(C.RAYJOBS, predicates=[primary])
        .owns(C.RAYCLUSTERS)
        .owns(JOBS)
        .owns(SERVICES)
        .watches(C.RAYCLUSTERS, selected_cluster_to_jobs)
        .with_options(max_concurrent_reconciles=max_concurrent_reconciles)
        .complete(reconciler)
    )

    close_with_manager(manager, dashboards, "rayjob-dashboards")
    return reconciler
