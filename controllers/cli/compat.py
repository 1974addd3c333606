"""What a KubeRay v1.7.0 command line asks for that has no effect here, said once at start.

A Deployment written for KubeRay may pass flags that change nothing (a deprecated flag, zap
flags that ``--log-stdout-encoder`` overrides, ``--config`` overriding run flags). Exiting would
make the swap fail on a flag that changes nothing, and silence would hide it. So each one is one
log line at start and the operator goes on. Every v1.7.0 feature gate is honoured both ways, so
none is among them. Only what KubeRay itself rejects is an error here (:func:`config_error`), with
exit code 2.
"""

from __future__ import annotations

from typing import Any

from .flags import BATCH_SCHEDULERS, FEATURE_GATES, OperatorFlags

__all__ = ["config_error", "startup_notes"]


def config_error(flags: OperatorFlags) -> str | None:
    """KubeRay's ``ValidateBatchSchedulerConfig``: the combinations it refuses to start with."""
    if flags.feature_gates.get("KubernetesWAS"):
        if flags.enable_batch_scheduler or flags.batch_scheduler:
            return (
                "batch scheduler configs validation failed: the KubernetesWAS feature gate cannot be "
                "combined with --batch-scheduler or --enable-batch-scheduler"
            )
        return None
    if flags.enable_batch_scheduler and flags.batch_scheduler:
        return (
            "batch scheduler configs validation failed: both enable-batch-scheduler (deprecated) and "
            "batch-scheduler are set; use batch-scheduler only"
        )
    if flags.batch_scheduler and flags.batch_scheduler not in BATCH_SCHEDULERS:
        return (
            "batch scheduler configs validation failed: scheduler is not supported, "
            f"name={flags.batch_scheduler} (KubeRay knows {', '.join(BATCH_SCHEDULERS)})"
        )
    return None


def startup_notes(flags: OperatorFlags) -> list[tuple[str, str, dict[str, Any]]]:
    """``(level, event, fields)`` log lines for the start-up, in a stable order."""
    notes: list[tuple[str, str, dict[str, Any]]] = [
        (
            "info",
            "operator.feature_gates",
            {"feature_gates": {g: flags.feature_gates[g] for g in FEATURE_GATES}},
        )
    ]
    if flags.forced_cluster_upgrade:
        notes.append(
            ("info", "operator.deprecated_flag", {"flag": "forced-cluster-upgrade", "effect": "none"})
        )
    notes.extend(("warning", event, fields) for event, fields in flags.config_notes)
    for name in flags.ignored_zap_flags:
        notes.append(
            (
                "info",
                "operator.flag_without_effect",
                {"flag": name, "reason": "as in KubeRay, --log-stdout-encoder sets the log format"},
            )
        )
    return notes
