"""Workqueue metrics under controller-runtime's names, labels and buckets.

controller-runtime registers its own copy of client-go's workqueue metrics (labels ``name`` and
``controller``, both the queue's name; ``workqueue_depth`` also ``priority``; histogram buckets
1e-8 … 1e3) rather than component-base's (``name`` only, 1e-6 … 1e3). KubeRay dashboards and
alerts are written against the controller-runtime flavour, so that is what we expose.

Only named queues report (as in client-go, an unnamed queue has no metrics). Label children are
resolved once per queue, because ``labels()`` costs more than the increment itself on the hot path.
"""

from __future__ import annotations

from collections.abc import Hashable

from prometheus_client import Counter, Gauge, Histogram

from kuberay_py.clock import Clock
from kuberay_py.metrics import registry

__all__ = ["MAX_PRIORITY_LABELS", "QueueMetrics"]

_BUCKETS = tuple(10e-9 * 10**i for i in range(12))  # prometheus.ExponentialBuckets(10e-9, 10, 12)

DEPTH = Gauge(
    "workqueue_depth", "Current depth of workqueue", ["name", "controller", "priority"], registry=registry
)
ADDS = Counter(
    "workqueue_adds", "Total number of adds handled by workqueue", ["name", "controller"], registry=registry
)
QUEUE_DURATION = Histogram(
    "workqueue_queue_duration_seconds",
    "How long in seconds an item stays in workqueue before being requested",
    ["name", "controller"],
    buckets=_BUCKETS,
    registry=registry,
)
WORK_DURATION = Histogram(
    "workqueue_work_duration_seconds",
    "How long in seconds processing an item from workqueue takes.",
    ["name", "controller"],
    buckets=_BUCKETS,
    registry=registry,
)
UNFINISHED_WORK = Gauge(
    "workqueue_unfinished_work_seconds",
    "How many seconds of work has been done that is in progress and hasn't been observed by "
    "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "
    "threads by observing the rate at which this increases.",
    ["name", "controller"],
    registry=registry,
)
LONGEST_RUNNING = Gauge(
    "workqueue_longest_running_processor_seconds",
    "How many seconds has the longest running processor for workqueue been running.",
    ["name", "controller"],
    registry=registry,
)
RETRIES = Counter(
    "workqueue_retries",
    "Total number of items added to the workqueue with a non-zero delay "
    "(rate-limited requeues, explicit RequeueAfter or AddAfter calls)",
    ["name", "controller"],
    registry=registry,
)

# controller-runtime caps the distinct priority label values per queue so a caller passing
# arbitrary ints cannot explode the series count.
MAX_PRIORITY_LABELS = 25
_OVERFLOW_LABEL = "exceeded_cardinality_limit"


class QueueMetrics:
    """The hooks client-go's queue calls: add / get / done / retry / update_unfinished_work."""

    def __init__(self, name: str, clock: Clock) -> None:
        self.name = name
        self._clock = clock
        self._adds = ADDS.labels(name, name)
        self._latency = QUEUE_DURATION.labels(name, name)
        self._work = WORK_DURATION.labels(name, name)
        self._unfinished = UNFINISHED_WORK.labels(name, name)
        self._longest = LONGEST_RUNNING.labels(name, name)
        self._retries = RETRIES.labels(name, name)
        self._depth: dict[int, Gauge] = {}
        self._add_times: dict[Hashable, float] = {}
        self._start_times: dict[Hashable, float] = {}
        self.depth(0)  # the series exists (at 0) before the first add, as in controller-runtime

    def depth(self, priority: int) -> Gauge:
        child = self._depth.get(priority)
        if child is None:
            label = str(priority) if len(self._depth) < MAX_PRIORITY_LABELS else _OVERFLOW_LABEL
            child = self._depth[priority] = DEPTH.labels(self.name, self.name, label)
        return child

    def add(self, item: Hashable, priority: int) -> None:
        self._adds.inc()
        self.depth(priority).inc()
        if item not in self._add_times:
            self._add_times[item] = self._clock.now()

    def reprioritise(self, old: int, new: int) -> None:
        self.depth(old).dec()
        self.depth(new).inc()

    def get(self, item: Hashable, priority: int) -> None:
        now = self._clock.now()
        self.depth(priority).dec()
        self._start_times[item] = now
        added = self._add_times.pop(item, None)
        if added is not None:
            self._latency.observe(now - added)

    def done(self, item: Hashable) -> None:
        started = self._start_times.pop(item, None)
        if started is not None:
            self._work.observe(self._clock.now() - started)

    def retry(self) -> None:
        self._retries.inc()

    def update_unfinished_work(self) -> None:
        now = self._clock.now()
        total = 0.0
        oldest = 0.0
        for started in self._start_times.values():
            age = now - started
            total += age
            oldest = max(oldest, age)
        self._unfinished.set(total)
        self._longest.set(oldest)
