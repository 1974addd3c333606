"""controller-runtime's controller metrics (``pkg/internal/controller/metrics``), same names and buckets."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from kuberay_py.metrics import registry

__all__ = [
    "ACTIVE_WORKERS",
    "MAX_CONCURRENT_RECONCILES",
    "RECONCILE_ERRORS",
    "RECONCILE_TIME",
    "RECONCILE_TOTAL",
    "TERMINAL_RECONCILE_ERRORS",
    "init_controller_metrics",
]

RECONCILE_TOTAL = Counter(
    "controller_runtime_reconcile",
    "Total number of reconciliations per controller",
    ["controller", "result"],
    registry=registry,
)
RECONCILE_ERRORS = Counter(
    "controller_runtime_reconcile_errors",
    "Total number of reconciliation errors per controller",
    ["controller"],
    registry=registry,
)
TERMINAL_RECONCILE_ERRORS = Counter(
    "controller_runtime_terminal_reconcile_errors",
    "Total number of terminal reconciliation errors per controller",
    ["controller"],
    registry=registry,
)
RECONCILE_TIME = Histogram(
    "controller_runtime_reconcile_time_seconds",
    "Length of time per reconciliation per controller",
    ["controller"],
    buckets=(
        0.005,
        0.01,
        0.025,
        0.05,
        0.1,
        0.15,
        0.2,
        0.25,
        0.3,
        0.35,
        0.4,
        0.45,
        0.5,
        0.6,
        0.7,
        0.8,
        0.9,
        1.0,
        1.25,
        1.5,
        1.75,
        2.0,
        2.5,
        3.0,
        3.5,
        4.0,
        4.5,
        5,
        6,
        7,
        8,
        9,
        10,
        15,
        20,
        25,
        30,
        40,
        50,
        60,
    ),
    registry=registry,
)
MAX_CONCURRENT_RECONCILES = Gauge(
    "controller_runtime_max_concurrent_reconciles",
    "Maximum number of concurrent reconciles per controller",
    ["controller"],
    registry=registry,
)
ACTIVE_WORKERS = Gauge(
    "controller_runtime_active_workers",
    "Number of currently used workers per controller",
    ["controller"],
    registry=registry,
)

RESULTS = ("success", "error", "requeue", "requeue_after")


def init_controller_metrics(controller: str, max_concurrent_reconciles: int) -> None:
    """Every series exists at 0 from the start (controller-runtime's ``initMetrics``)."""
    for result in RESULTS:
        RECONCILE_TOTAL.labels(controller, result).inc(0)
    for counter in (RECONCILE_ERRORS, TERMINAL_RECONCILE_ERRORS):
        counter.labels(controller).inc(0)
    MAX_CONCURRENT_RECONCILES.labels(controller).set(max_concurrent_reconciles)
    ACTIVE_WORKERS.labels(controller).set(0)
