"""Operator-level switches for the RayCluster builders and reconciler.

KubeRay reads these from the operator's environment (``ENABLE_PROBES_INJECTION`` …). We read the
environment once, into a frozen value passed down explicitly, so builders stay pure functions and
tests can vary one switch without touching ``os.environ``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from controllers import constants as C
from controllers.api.gates import ClusterGates
from controllers.batchscheduler import Scheduler
from controllers.raycluster.pod_defaults import PodDefaults
from controllers.raycluster.route import OpenShift

__all__ = ["RayClusterOptions"]


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    return raw.strip().lower() == "true"


@dataclass(frozen=True)
class RayClusterOptions:
    enable_probes_injection: bool = True
    enable_init_container_injection: bool = True
    enable_login_shell: bool = False
    deterministic_head_pod_name: bool = False
    head_cluster_ip_service: bool = False
    enable_random_pod_delete: bool = False
    enable_gcs_ft_redis_cleanup: bool = True
    cluster_domain: str = C.DEFAULT_CLUSTER_DOMAIN
    # Periodic resync of every RayCluster (KubeRay's RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV).
    resync_period: float = C.RAYCLUSTER_DEFAULT_REQUEUE_SECONDS
    # How long a create expectation may stay unobserved before we stop waiting (KubeRay: 30 s).
    expectation_timeout: float = 30.0
    # Worker-counter-only status changes are written at most this often (0 = at once).
    status_coalesce_seconds: float = 5.0
    # Requeue interval while a GCS-FT cluster waits for its head Pod to go away (KubeRay: 10 s).
    redis_cleanup_poll: float = 10.0
    # --batch-scheduler / --enable-batch-scheduler (controllers.batchscheduler.from_options).
    batch_scheduler: Scheduler | None = None
    # OpenShift detection for the head Route (controllers.raycluster.route); None: Ingress only.
    openshift: OpenShift | None = None
    # The alpha feature gates that change what a spec may say (from --feature-gates, not the env).
    gates: ClusterGates = field(default_factory=ClusterGates)
    # The Configuration file's Pod defaults (--config); none unless the operator was given one.
    pod_defaults: PodDefaults = field(default_factory=PodDefaults)
    # Worker Pods one reconcile pass creates at most (0 = all at once, as KubeRay); the rest come in
    # the passes their creates' watch events bring, behind every other RayCluster already queued,
    # so one big scale-up does not hold the others (docs/differences.md).
    worker_creates_per_pass: int = C.WORKER_CREATES_PER_PASS

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> RayClusterOptions:
        """Read KubeRay's operator env vars; a ``false`` only where KubeRay defaults to on."""
        e = os.environ if env is None else env
        resync = C.RAYCLUSTER_DEFAULT_REQUEUE_SECONDS
        raw = e.get(C.RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV, "").strip()
        if raw:
            try:
                resync = float(raw)
            except ValueError:
                raise ValueError(
                    f"{C.RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV}={raw!r} is not a number of seconds"
                ) from None
            if resync <= 0:
                raise ValueError(f"{C.RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV} must be > 0, got {raw!r}")
        return cls(
            enable_probes_injection=e.get(C.ENABLE_PROBES_INJECTION, "").strip().lower() != "false",
            enable_init_container_injection=e.get(C.ENABLE_INIT_CONTAINER_INJECTION, "").strip().lower()
            != "false",
            enable_login_shell=_flag(e, C.ENABLE_LOGIN_SHELL, False),
            deterministic_head_pod_name=_flag(e, C.ENABLE_DETERMINISTIC_HEAD_POD_NAME, False),
            head_cluster_ip_service=_flag(e, C.ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE, False),
            enable_random_pod_delete=_flag(e, C.ENABLE_RANDOM_POD_DELETE, False),
            enable_gcs_ft_redis_cleanup=e.get(C.ENABLE_GCS_FT_REDIS_CLEANUP, "").strip().lower() != "false",
            cluster_domain=e.get(C.CLUSTER_DOMAIN_ENV, "").strip() or C.DEFAULT_CLUSTER_DOMAIN,
            resync_period=resync,
        )
