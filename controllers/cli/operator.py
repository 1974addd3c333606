"""Assembles the operator: one Manager with the RayCluster, RayService and RayJob controllers
(and RayCronJob behind its feature gate).

``run`` and ``demo`` both call :func:`build_manager`, so the demo exercises exactly the wiring a
cluster runs: the same cache selectors and transforms (only Ray Pods are cached, and only the
fields the controllers read), the same controllers, the same head-proxy checker and the same
metrics.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from typing import Any

import anyio
from prometheus_client.registry import Collector

from controllers.api.gates import ClusterGates
from controllers.batchscheduler import Scheduler
from controllers.batchscheduler import from_options as batch_scheduler_from_options
from controllers.constants import RAYCLUSTERS, RAYJOBS, RAYSERVICES
from controllers.metrics import register_info_metrics
from controllers.ray.dashboard import DashboardClientFactory
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.route import USE_INGRESS_ON_OPENSHIFT, OpenShift
from controllers.raycluster.setup import cache_selectors, cache_transforms
from controllers.raycluster.setup import setup as setup_raycluster
from controllers.raycronjob.options import RayCronJobOptions
from controllers.raycronjob.setup import setup as setup_raycronjob
from controllers.raycronjob.ticks import MissedTicks
from controllers.rayjob.builders import submitter_pod_spec as rayjob_submitter_pod_spec
from controllers.rayjob.metrics import EXECUTION_DURATION, register_job_metrics
from controllers.rayjob.options import RayJobOptions
from controllers.rayjob.setup import setup as setup_rayjob
from controllers.rayservice.options import RayServiceOptions
from controllers.rayservice.setup import setup as setup_rayservice
from controllers.webhooks import setup_webhooks
from kuberay_py.cache import CacheNotSynced
from kuberay_py.client import ClientConfig, Resource
from kuberay_py.manager import Manager, ManagerOptions
from kuberay_py.metrics import registry
from kuberay_py.webhook import WebhookServer

from .flags import OperatorFlags

__all__ = ["ENABLE_WEBHOOKS", "build_manager", "webhooks_enabled"]

ENABLE_WEBHOOKS = "ENABLE_WEBHOOKS"


def webhooks_enabled(flags: OperatorFlags) -> bool:
    """KubeRay's test: ``ENABLE_WEBHOOKS`` is exactly ``true`` (``True`` or ``1`` are not)."""
    if flags.enable_webhooks is not None:
        return flags.enable_webhooks
    return os.environ.get(ENABLE_WEBHOOKS) == "true"


def build_manager(
    config: ClientConfig,
    flags: OperatorFlags,
    *,
    leader_election: bool | None = None,
) -> Manager:
    """A manager with both controllers, the head-proxy checker and KubeRay's info metrics."""
    election = flags.enable_leader_election if leader_election is None else leader_election
    options = ManagerOptions(
        metrics_bind_address=flags.metrics_addr,
        health_probe_bind_address=flags.health_probe_bind_address,
        leader_election=election,
        leader_election_id=flags.leader_election_id,
        leader_election_namespace=flags.leader_election_namespace or os.environ.get("POD_NAMESPACE") or None,
        graceful_shutdown_timeout=flags.graceful_shutdown_timeout,
        namespaces=flags.watch_namespace or None,
        cache_selectors=cache_selectors(),
        # Cached Pods keep only the fields the controllers read (memory at thousands of Pods).
        cache_transforms=cache_transforms(),
        reconcile_retry_qps=flags.reconcile_retry_qps,
        reconcile_retry_burst=flags.reconcile_retry_burst,
    )
    manager = Manager(config, options)
    # --enable-batch-scheduler / --batch-scheduler (and the Configuration's enableBatchScheduler /
    # batchScheduler) arrive as OperatorFlags.enable_batch_scheduler / .batch_scheduler; the
    # KubernetesWAS gate as feature_gates["KubernetesWAS"].
    scheduler = batch_scheduler_from_options(
        flags.enable_batch_scheduler,
        flags.batch_scheduler,
        submitter_pod_spec=rayjob_submitter_pod_spec,
        kubernetes_was=flags.feature_gates.get("KubernetesWAS", False),
    )
    cluster_gates = ClusterGates.from_feature_gates(flags.feature_gates)
    setup_raycluster(
        manager,
        options=dataclasses.replace(
            RayClusterOptions.from_env(),
            batch_scheduler=scheduler,
            openshift=OpenShift(
                manager.client, use_ingress=os.environ.get(USE_INGRESS_ON_OPENSHIFT, "").lower() == "true"
            ),
            gates=cluster_gates,
            pod_defaults=flags.pod_defaults,
        ),
        max_concurrent_reconciles=flags.reconcile_concurrency,
        resync_period=flags.raycluster_resync_period,
    )
    setup_rayservice(
        manager,
        dashboard_factory=_dashboards(config, flags),
        options=RayServiceOptions(
            incremental_upgrade=flags.feature_gates["RayServiceIncrementalUpgrade"],
            cluster_gates=cluster_gates,
        ),
        max_concurrent_reconciles=flags.reconcile_concurrency,
        head_check_concurrency=flags.head_proxy_health_concurrency,
        head_check_period=flags.head_proxy_health_period,
    )

    gates = flags.feature_gates
    setup_rayjob(
        manager,
        dashboard_factory=_dashboards(config, flags),
        max_concurrent_reconciles=flags.reconcile_concurrency,
        options=_rayjob_options(flags, scheduler, cluster_gates),
    )
    if gates["RayCronJob"]:
        missed: MissedTicks = "latest" if flags.raycronjob_missed_ticks == "latest" else "all"
        setup_raycronjob(
            manager,
            options=RayCronJobOptions(missed_ticks=missed),
            max_concurrent_reconciles=flags.reconcile_concurrency,
        )

    def cached(res: Resource) -> list[dict[str, Any]]:
        try:
            return manager.cache.list(res)
        except CacheNotSynced:
            return []

    async def info_metrics() -> None:
        unregister = register_info_metrics(lambda: cached(RAYCLUSTERS), lambda: cached(RAYSERVICES))
        unregister_jobs = register_job_metrics(lambda: cached(RAYJOBS))
        try:
            await anyio.sleep_forever()
        finally:
            unregister_jobs()
            unregister()

    async def no_cr_metrics() -> None:
        # KubeRay without --enable-metrics registers none of its kuberay_* CR collectors; the
        # execution-duration gauge is module-level here, so it leaves the registry while we run.
        with _unregistered(EXECUTION_DURATION):
            await anyio.sleep_forever()

    if webhooks_enabled(flags):
        webhooks = WebhookServer(flags.webhook_server)
        setup_webhooks(webhooks)
        manager.add_webhook_server(webhooks)
        # Ready once admission requests can be answered, so the webhook Service routes here only then.
        manager.add_readyz_check("webhook", webhooks.started_checker())

    # Every replica exports the info metrics from its own cache, as KubeRay's collectors do.
    manager.add_runnable(info_metrics if flags.enable_metrics else no_cr_metrics, needs_leader_election=False)
    return manager


def _rayjob_options(
    flags: OperatorFlags, scheduler: Scheduler | None, cluster_gates: ClusterGates
) -> RayJobOptions:
    options = dataclasses.replace(
        RayJobOptions.from_env(),
        deletion_policy=flags.feature_gates["RayJobDeletionPolicy"],
        batch_scheduler=scheduler,
        cluster_gates=cluster_gates,
        sidecar_submitter_restart=flags.feature_gates["SidecarSubmitterRestart"],
    )
    if flags.delete_rayjob_after_job_finishes is not None:  # the Configuration file's field wins
        options = dataclasses.replace(
            options, delete_rayjob_after_finishes=flags.delete_rayjob_after_job_finishes
        )
    return options


@contextlib.contextmanager
def _unregistered(collector: Collector) -> Iterator[None]:
    try:
        registry.unregister(collector)
    except KeyError:  # already out (another manager in this process)
        yield
        return
    try:
        yield
    finally:
        registry.register(collector)


def _dashboards(config: ClientConfig, flags: OperatorFlags) -> DashboardClientFactory:
    """One factory per controller (each closes its own); through the API server when asked."""
    return DashboardClientFactory(kubernetes_proxy=config if flags.use_kubernetes_proxy else None)
