"""Wiring the RayCluster controller into a manager, and the Pod cache both controllers read.

Watches: ``for_(RayCluster)`` on generation, label and annotation changes (a status write of our
own wakes nothing), ``owns`` Pods and Services. Behind KubeRay's alpha gates, two more controllers
over RayClusters: ``networkpolicy`` (owns NetworkPolicies) and ``raycluster-mtls`` (the
cert-manager PKI). The Pod informer also feeds the create/delete
expectations. The manager's cache must be built with :func:`cache_selectors` (only Ray Pods and
our own Jobs are cached, KubeRay #4761) and :func:`cache_transforms` (each cached Pod keeps only
:class:`controllers.common.pods.SlimPod`); the RayService controller reads the same Pod cache.

A new watch goes here; what a reconcile does with it goes in a phase module.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from controllers import constants as C
from controllers.batchscheduler.kubernetes_was import PODGROUPS as WAS_PODGROUPS
from controllers.batchscheduler.kubernetes_was import WORKLOADS as WAS_WORKLOADS
from controllers.batchscheduler.volcano import PODGROUPS as VOLCANO_PODGROUPS
from controllers.common.scope import deps_from
from controllers.raycluster import mtls_pki, networkpolicy_controller
from controllers.raycluster.mtls_pki import MTLSReconciler
from controllers.raycluster.networkpolicy_controller import NetworkPolicyReconciler
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.pod_cache import slim_pod
from controllers.raycluster.reconciler import RayClusterReconciler
from kuberay_py.client import Resource
from kuberay_py.client.resources import JOBS, NETWORKPOLICIES, PODS, SERVICES
from kuberay_py.clock import Clock, RealClock
from kuberay_py.controller import AnnotationsChanged, Expectations, GenerationChanged, LabelsChanged, or_
from kuberay_py.objects import Obj

if TYPE_CHECKING:
    from kuberay_py.manager.manager import Manager

__all__ = ["CONTROLLER_NAME", "cache_selectors", "cache_transforms", "setup"]

CONTROLLER_NAME = "raycluster-controller"


def cache_selectors() -> dict[Resource, str]:
    """Label selectors for the manager's cache: only Ray Pods and our own Jobs (KubeRay #4761)."""
    return {PODS: C.POD_CACHE_SELECTOR, JOBS: C.JOB_CACHE_SELECTOR}


def cache_transforms() -> dict[Resource, Callable[[Obj], Obj]]:
    """Cache transforms for the manager: cached Pods keep only what the controllers read.

    Cached Pods are then partial (see :mod:`controllers.raycluster.pod_cache`): Pods are only
    ever patched or deleted, never updated from the cache.
    """
    return {PODS: slim_pod}


def setup(
    manager: Manager,
    *,
    max_concurrent_reconciles: int = 1,
    options: RayClusterOptions | None = None,
    resync_period: float | None = None,
    clock: Clock | None = None,
) -> RayClusterReconciler:
    """Register the RayCluster controller with a :class:`kuberay_py.manager.Manager`."""
    opts = options or RayClusterOptions.from_env()
    if resync_period is not None:
        if resync_period <= 0:
            raise ValueError(f"resync_period must be > 0, got {resync_period}")
        opts = dataclasses.replace(opts, resync_period=resync_period)
    expectations = Expectations(clock=clock)
    # The RayCluster controllers keep the real clock unless one is injected (the manager's may be
    # a test's FakeClock stepping another controller).
    clock = clock or RealClock()
    cert_manager = mtls_pki.CertManager(manager.client)
    deps = deps_from(manager, CONTROLLER_NAME, opts, clock=clock)
    reconciler = RayClusterReconciler(deps, expectations=expectations, cert_manager=cert_manager)
    manager.cache.informer_for(PODS).add_event_handler(expectations)
    builder = (
        manager.controller(CONTROLLER_NAME)
        .for_(C.RAYCLUSTERS, predicates=[or_(GenerationChanged(), LabelsChanged(), AnnotationsChanged())])
        .owns(PODS)
        .owns(SERVICES)
    )
    # The scheduler's own kinds, as KubeRay's ConfigureReconciler: without their API these watches
    # never sync and the controller fails to start, as KubeRay's operator does.
    owned = opts.batch_scheduler.owns if opts.batch_scheduler is not None else None
    if owned == VOLCANO_PODGROUPS:
        builder = builder.owns(VOLCANO_PODGROUPS)
    elif owned == WAS_WORKLOADS:  # KubernetesWAS
        builder = builder.owns(WAS_WORKLOADS).owns(WAS_PODGROUPS)
    builder.with_options(max_concurrent_reconciles=max_concurrent_reconciles).complete(reconciler)
    # KubeRay's gated controllers, each its own as in KubeRay's main (alpha gates, off by default).
    if opts.gates.mtls:
        # Certificates and Issuers are not watched (their CRDs may be absent): it requeues itself.
        mtls = MTLSReconciler(deps_from(manager, mtls_pki.EVENT_SOURCE, opts, clock=clock), cert_manager)
        manager.controller(mtls_pki.CONTROLLER_NAME).for_(C.RAYCLUSTERS).complete(mtls)
    if opts.gates.network_policy:
        policies = NetworkPolicyReconciler(deps_from(manager, networkpolicy_controller.EVENT_SOURCE, opts))
        (
            manager.controller(networkpolicy_controller.CONTROLLER_NAME)
            .for_(C.RAYCLUSTERS, predicates=[GenerationChanged()])
            .owns(NETWORKPOLICIES)
            .with_options(max_concurrent_reconciles=max_concurrent_reconciles)
            .complete(policies)
        )
    return reconciler
