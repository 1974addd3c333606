"""The RayJob controller's knobs: KubeRay's operator env vars, plus our dashboard poll bounds."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from controllers.api.gates import ClusterGates
from controllers.batchscheduler import Scheduler

__all__ = ["RayJobOptions"]


def _seconds(name: str, default: float) -> float:
    """KubeRay's parsing: a value that is not a positive integer falls back to the default."""
    try:
        value = int(os.environ.get(name, ""))
    except ValueError:
        return default
    return float(value) if value > 0 else default


def _any_seconds(name: str, default: float) -> float:
    """strconv.Atoi's parsing, any sign accepted (KubeRay checks nothing more for this one)."""
    raw = os.environ.get(name, "")
    return float(int(raw)) if re.fullmatch(r"[+-]?[0-9]+", raw) else default


@dataclass(frozen=True)
class RayJobOptions:
    # RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS: dashboard polls failing this long fail the job.
    status_check_timeout: float = 300.0
    # KubeRay's DefaultSubmitterFinishedTimeout: the submitter ended but Ray's job is not terminal.
    submitter_finished_timeout: float = 30.0
    # RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS: Ray's job ended this long ago
    # (rayJobInfo.endTime) and the RayJob is still Running, e.g. a `ray job submit` that never
    # exits: it goes Complete / Failed anyway.
    transition_grace_period: float = 300.0
    # DELETE_RAYJOB_CR_AFTER_JOB_FINISHES: shutdown deletes the RayJob instead of the cluster.
    delete_rayjob_after_finishes: bool = False
    cluster_domain: str = "cluster.local"
    # The RayJobDeletionPolicy feature gate (beta, on by default in KubeRay v1.7).
    deletion_policy: bool = True
    # The RayCluster alpha gates: what rayClusterSpec may say (the RayCluster controller's own).
    cluster_gates: ClusterGates = field(default_factory=ClusterGates)
    # The SidecarSubmitterRestart feature gate (alpha, off): the SidecarMode submitter container
    # restarts on failure (up to submitterConfig.backoffLimit times) instead of failing the job.
    sidecar_submitter_restart: bool = False
    # Dashboard polls while a Ray job runs: first after ``poll_min`` s, doubling while nothing
    # changes, at most ``poll_max`` s apart (KubeRay polls every 3 s, always).
    poll_min: float = 1.0
    poll_max: float = 30.0
    # --batch-scheduler / --enable-batch-scheduler (controllers.batchscheduler.from_options).
    batch_scheduler: Scheduler | None = None

    @classmethod
    def from_env(cls) -> RayJobOptions:
        return cls(
            status_check_timeout=_seconds("RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS", 300.0),
            transition_grace_period=_any_seconds(
                "RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS", 300.0
            ),
            delete_rayjob_after_finishes=os.environ.get("DELETE_RAYJOB_CR_AFTER_JOB_FINISHES", "").lower()
            == "true",
            cluster_domain=os.environ.get("CLUSTER_DOMAIN") or "cluster.local",
        )
