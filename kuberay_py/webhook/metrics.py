"""controller-runtime's webhook metrics, labelled by the webhook's path.

Dashboards and alerts written for a Go operator query these names
(``controller_runtime_webhook_requests_total{webhook,code}`` and friends), so they keep them.
``code`` is the HTTP status the server answered with; a denial is still a 200 there, the verdict
is inside the AdmissionReview.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from kuberay_py.metrics import registry

__all__ = ["REQUESTS_IN_FLIGHT", "REQUEST_LATENCY", "REQUEST_TOTAL"]

REQUEST_LATENCY = Histogram(
    "controller_runtime_webhook_latency_seconds",
    "Histogram of the latency of processing admission requests",
    ["webhook"],
    registry=registry,
)
REQUEST_TOTAL = Counter(
    "controller_runtime_webhook_requests",
    "Total number of admission requests by HTTP status code.",
    ["webhook", "code"],
    registry=registry,
)
REQUESTS_IN_FLIGHT = Gauge(
    "controller_runtime_webhook_requests_in_flight",
    "Current number of admission requests being served.",
    ["webhook"],
    registry=registry,
)
