"""Prometheus series of the head-proxy health checker and of Serve endpoints.

Together they let a dashboard show that the operator's HTTP probe rate stays flat (one probe per
head Pod per period) while the number of serving Pods grows: workers reach the serve Service
through their own readiness probes, which the kubelet runs, never through the operator.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from kuberay_py.metrics import registry

__all__ = [
    "HEAD_PROXY_HEALTHY",
    "HEALTH_CHECKS_COALESCED",
    "HEALTH_CHECKS_IN_FLIGHT",
    "HEALTH_CHECKS_TOTAL",
    "HEALTH_CHECK_DURATION",
    "HEALTH_CHECK_TARGETS",
    "SERVE_ENDPOINTS",
]

HEALTH_CHECKS_TOTAL = Counter(
    "kuberay_head_proxy_health_checks_total",
    "HTTP checks of head Pods' Serve proxies (GET /-/healthz), by result: "
    "healthy (HTTP 200), unhealthy (any other status), timeout, error (no HTTP exchange).",
    ["result"],
    registry=registry,
)
HEALTH_CHECK_DURATION = Histogram(
    "kuberay_head_proxy_health_check_duration_seconds",
    "Duration of one head proxy check, from the request to the (capped) body read or the failure.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 2.5, 5.0),
    registry=registry,
)
HEALTH_CHECKS_IN_FLIGHT = Gauge(
    "kuberay_head_proxy_health_checks_in_flight",
    "Head proxy checks holding a concurrency slot right now (bounded by --head-proxy-health-concurrency).",
    registry=registry,
)
HEALTH_CHECKS_COALESCED = Counter(
    "kuberay_head_proxy_health_check_coalesced_total",
    "Check requests answered by joining a check of the same head Pod already under way.",
    registry=registry,
)
HEALTH_CHECK_TARGETS = Gauge(
    "kuberay_head_proxy_health_check_targets",
    "Head Pods (of active and pending RayService clusters) the checker currently watches.",
    registry=registry,
)
HEAD_PROXY_HEALTHY = Gauge(
    "kuberay_head_proxy_healthy",
    "Latest check result per head Pod: 1 when its Serve proxy answered HTTP 200, else 0. The series "
    "goes away with the head Pod, so alerts fire only for heads that still exist.",
    ["namespace", "pod", "rayservice"],
    registry=registry,
)
SERVE_ENDPOINTS = Gauge(
    "kuberay_serve_endpoints",
    "Ready endpoints of a RayService's serve Service, by source: head (selected through the "
    "ray.io/serve label the operator sets) or worker (selected through the kubelet's readiness probe).",
    ["namespace", "name", "source"],
    registry=registry,
)
