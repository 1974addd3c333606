"""Workqueue metrics under controller-runtime's names, labels and buckets.

controller-runtime registers its own copy of client-go's workqueue metrics (labels ``name`` and
``controller``, both the queue's name; ``workqueue_depth`` also ``priority``; histogram buckets
1e-8 … 1e3) rather than component-base's (``name`` only, 1e-6 … 1e3). KubeRay dashboards and
alerts are written against the controller-runtime flavour, so that is what we expose.

Why a custom collector instead of ``prometheus_client.Counter``/``Histogram`` objects: every item
passes through five metric updates (add, depth up, depth down, queue latency, work duration), and
prometheus_client's thread-safe values made those updates cost twice as much as the queue itself
(measured by ``bench/workqueue.py``). The queue runs on one event loop thread, so it updates plain
numbers and :class:`_WorkqueueCollector` turns them into the same series at scrape time.

Only named queues report (as in client-go, an unnamed queue has no metrics). Queues sharing a name
share series, as label children do in a Prometheus registry.
"""

from __future__ import annotations

import weakref
from bisect import bisect_left
from collections.abc import Hashable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from kuberay_py.clock import Clock
from kuberay_py.metrics import registry

__all__ = ["BUCKETS", "MAX_PRIORITY_LABELS", "QueueMetrics"]

BUCKETS: tuple[float, ...] = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0)
"""``prometheus.ExponentialBuckets(10e-9, 10, 12)``."""
_LE = [str(floatToGoString(b)) for b in BUCKETS] + ["+Inf"]  # type: ignore[no-untyped-call]

# controller-runtime caps the distinct priority label values per queue so a caller passing
# arbitrary ints cannot explode the series count.
MAX_PRIORITY_LABELS = 25
_OVERFLOW_LABEL = "exceeded_cardinality_limit"

_HELP = {
    "depth": "Current depth of workqueue",
    "adds": "Total number of adds handled by workqueue",
    "queue": "How long in seconds an item stays in workqueue before being requested",
    "work": "How long in seconds processing an item from workqueue takes.",
    "unfinished": "How many seconds of work has been done that is in progress and hasn't been observed by "
    "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "
    "threads by observing the rate at which this increases.",
    "longest": "How many seconds has the longest running processor for workqueue been running.",
    "retries": "Total number of items added to the workqueue with a non-zero delay "
    "(rate-limited requeues, explicit RequeueAfter or AddAfter calls)",
}


class _Histogram:
    __slots__ = ("counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.total += value
        self.counts[bisect_left(BUCKETS, value)] += 1

    def cumulative(self) -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = []
        running = 0
        for le, n in zip(_LE, self.counts, strict=True):
            running += n
            out.append((le, float(running)))
        return out


class _Series:
    """The values behind one queue name's series."""

    __slots__ = ("adds", "depth", "latency", "longest", "retries", "sources", "unfinished", "work")

    def __init__(self) -> None:
        self.adds = 0
        self.retries = 0
        self.depth: dict[str, int] = {"0": 0}
        self.latency = _Histogram()
        self.work = _Histogram()
        self.unfinished = 0.0
        self.longest = 0.0
        self.sources: weakref.WeakSet[QueueMetrics] = weakref.WeakSet()  # the live queues of this name

    def refresh_unfinished(self) -> None:
        """The unfinished-work gauges from the live queues' in-flight items, at scrape time.

        controller-runtime refreshes them every 500 ms; a timer would wake an idle operator's loop
        twice a second per queue (two thirds of its idle wake-ups) for values nobody reads in between.
        """
        sources = list(self.sources)
        if not sources:
            return  # the last values stay, as after controller-runtime's last refresh
        total, oldest = 0.0, 0.0
        for source in sources:
            work, longest = source.unfinished_work()
            total += work
            oldest = max(oldest, longest)
        self.unfinished, self.longest = total, oldest


_SERIES: dict[str, _Series] = {}


class _WorkqueueCollector(Collector):
    def describe(self) -> list[Metric]:
        return list(self._families())

    def collect(self) -> Iterator[Metric]:
        depth, adds, queue, work, unfinished, longest, retries = self._families()
        for name, s in sorted(_SERIES.items()):
            labels = [name, name]
            for priority, value in sorted(s.depth.items()):
                depth.add_metric([*labels, priority], value)
            adds.add_metric(labels, s.adds)
            queue.add_metric(labels, s.latency.cumulative(), s.latency.total)
            work.add_metric(labels, s.work.cumulative(), s.work.total)
            s.refresh_unfinished()
            unfinished.add_metric(labels, s.unfinished)
            longest.add_metric(labels, s.longest)
            retries.add_metric(labels, s.retries)
        yield from (depth, adds, queue, work, unfinished, longest, retries)

    @staticmethod
    def _families() -> tuple[
        GaugeMetricFamily,
        CounterMetricFamily,
        HistogramMetricFamily,
        HistogramMetricFamily,
        GaugeMetricFamily,
        GaugeMetricFamily,
        CounterMetricFamily,
    ]:
        labels = ["name", "controller"]
        return (
            GaugeMetricFamily("workqueue_depth", _HELP["depth"], labels=[*labels, "priority"]),
            CounterMetricFamily("workqueue_adds", _HELP["adds"], labels=labels),
            HistogramMetricFamily("workqueue_queue_duration_seconds", _HELP["queue"], labels=labels),
            HistogramMetricFamily("workqueue_work_duration_seconds", _HELP["work"], labels=labels),
            GaugeMetricFamily("workqueue_unfinished_work_seconds", _HELP["unfinished"], labels=labels),
            GaugeMetricFamily("workqueue_longest_running_processor_seconds", _HELP["longest"], labels=labels),
            CounterMetricFamily("workqueue_retries", _HELP["retries"], labels=labels),
        )


registry.register(_WorkqueueCollector())


class QueueMetrics:
    """The hooks client-go's queue calls: add / get / done / retry (unfinished work: at scrape time)."""

    def __init__(self, name: str, clock: Clock) -> None:
        self.name = name
        self._clock = clock
        self._series = _SERIES.setdefault(name, _Series())
        self._series.sources.add(self)
        self._labels: dict[int, str] = {}
        self._add_times: dict[Hashable, float] = {}
        self._start_times: dict[Hashable, float] = {}

    def _label(self, priority: int) -> str:
        label = self._labels.get(priority)
        if label is None:
            depth = self._series.depth
            label = str(priority)
            if label not in depth and len(depth) >= MAX_PRIORITY_LABELS:
                label = _OVERFLOW_LABEL
            depth.setdefault(label, 0)
            self._labels[priority] = label
        return label

    def add(self, item: Hashable, priority: int) -> None:
        s = self._series
        s.adds += 1
        s.depth[self._label(priority)] += 1
        if item not in self._add_times:
            self._add_times[item] = self._clock.now()

    def reprioritise(self, old: int, new: int) -> None:
        depth = self._series.depth
        depth[self._label(old)] -= 1
        depth[self._label(new)] += 1

    def get(self, item: Hashable, priority: int) -> None:
        now = self._clock.now()
        s = self._series
        s.depth[self._label(priority)] -= 1
        self._start_times[item] = now
        added = self._add_times.pop(item, None)
        if added is not None:
            s.latency.observe(now - added)

    def done(self, item: Hashable) -> None:
        started = self._start_times.pop(item, None)
        if started is not None:
            self._series.work.observe(self._clock.now() - started)

    def retry(self) -> None:
        self._series.retries += 1

    def unfinished_work(self) -> tuple[float, float]:
        """Seconds of work in progress, and of the longest-running item, on the queue's clock."""
        now = self._clock.now()
        total = 0.0
        oldest = 0.0
        for started in self._start_times.values():
            age = now - started
            total += age
            oldest = max(oldest, age)
        return total, oldest
