"""The controller workqueue: client-go's rules, controller-runtime's priorities and metrics.

See :mod:`kuberay_py.workqueue.queue` for the semantics and
:mod:`kuberay_py.workqueue.rate_limiters` for the back-off choices.
"""

from kuberay_py.workqueue.queue import (
    LOW_PRIORITY,
    RateLimitingQueue,
    ShutDown,
)
from kuberay_py.workqueue.rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_rate_limiter,
    per_item_rate_limiter,
)

__all__ = [
    "LOW_PRIORITY",
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "RateLimitingQueue",
    "ShutDown",
    "default_rate_limiter",
    "per_item_rate_limiter",
]
