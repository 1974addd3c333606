"""client-go's REST client metrics (``k8s.io/client-go/tools/metrics`` via controller-runtime).

Names, labels and buckets match controller-runtime's ``client_go_adapter.go`` and component-base's
``restclient`` metrics, so existing dashboards work. ``method``/``verb`` carry the HTTP method and
``host`` the API server's ``host:port``; a request that got no response counts with
``code="<error>"``, as in client-go.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from kuberay_py.metrics import registry

__all__ = [
    "RATE_LIMITER_DURATION",
    "REQUESTS_TOTAL",
    "REQUEST_DURATION",
    "REQUEST_RETRIES_TOTAL",
]

_LATENCY_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)

REQUESTS_TOTAL = Counter(
    "rest_client_requests_total",
    "Number of HTTP requests, partitioned by status code, method, and host.",
    ["code", "method", "host"],
    registry=registry,
)
REQUEST_DURATION = Histogram(
    "rest_client_request_duration_seconds",
    "Request latency in seconds. Broken down by verb, and host.",
    ["verb", "host"],
    buckets=_LATENCY_BUCKETS,
    registry=registry,
)
RATE_LIMITER_DURATION = Histogram(
    "rest_client_rate_limiter_duration_seconds",
    "Client side rate limiter latency in seconds. Broken down by verb, and host.",
    ["verb", "host"],
    buckets=_LATENCY_BUCKETS,
    registry=registry,
)
REQUEST_RETRIES_TOTAL = Counter(
    "rest_client_request_retries_total",
    "Number of request retries, partitioned by status code, verb, and host.",
    ["code", "verb", "host"],
    registry=registry,
)
