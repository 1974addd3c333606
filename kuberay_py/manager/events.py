"""Kubernetes Events (``events.k8s.io/v1``) from reconcilers: aggregated, paced, never fatal.

A reconciler that emits "CreatedWorkerPod" on every pass, or "FailedToCreateHeadPod" on every
retry of a persistent 403, must not create thousands of Event objects, must not spend a request
per retry on them, and must not slow down or fail because the API server is slow to store them.
So, like client-go's ``tools/events`` broadcaster:

* **Aggregation.** Events with the same regarding object, reason, type, action, related object
  and reporting controller/instance are one *series* — client-go's ``getKey``, which leaves the
  note out (the API server keeps ``note`` immutable after the create, so the Event keeps the
  first occurrence's note). The first occurrence creates an Event; repeats patch ``series.count``
  and ``series.lastObservedTime`` of that same object. A repeat more than ``aggregation_window``
  (client-go's 6 minutes) after the previous occurrence starts a new Event.
* **Paced series patches.** Creates are written at once, and so is a series' next patch while
  the series has budget: three prompt patches for a Normal series (progress steps, such as a
  second Service created, are news, written while the object converges, so a converged system
  has nothing left to write) and none for a Warning series (repeats of a Warning are nearly always
  retries of one failure: one aggregated Warning per object, not one write per retry). One prompt
  patch comes back every
  ``series_refresh`` (10 min). Out of budget, a patch waits for the refill, or until
  ``aggregation_window`` after the repeat that made it necessary if that comes first (the
  series' final count). Repeats that arrive while a write is in flight become one follow-up
  write; ``series_coalesce`` (default 0) adds a minimum spacing between writes of one series.
  client-go writes the second occurrence at once and then only every 30 minutes; this keeps
  ``series.count`` fresher while a persistent failure retried every few seconds costs one create
  and then at most one write per object every 6 minutes. Nothing is written for a series without
  a new occurrence.
* **Asynchronous and bounded.** :meth:`EventRecorder.event` only updates an in-memory series and
  schedules it; one background task (:meth:`EventBroadcaster.run`, started by the manager) writes
  what is due. When ``max_pending`` new series are waiting to be created, further new ones are
  dropped and counted in ``event_recorder_dropped_total{reason="buffer_full"}``; the caller never
  blocks. :meth:`EventBroadcaster.flush` (used at shutdown) writes every pending count at once.
* **Never fatal.** Write failures are logged and counted; transient ones (429, 5xx, transport)
  are retried a few times with back-off. Nothing is raised into the reconcile, except for a
  programming error in the call itself (bad ``type_``, empty reason), which fails loudly.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import socket
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from prometheus_client import Counter

from kuberay_py.client import (
    AlreadyExists,
    ApiError,
    Client,
    NotFound,
    ServerError,
    TooManyRequests,
    TransportError,
    resources,
)
from kuberay_py.clock import Clock, RealClock
from kuberay_py.log import get_logger
from kuberay_py.manager.leaselock import format_micro_time
from kuberay_py.metrics import registry

__all__ = ["EventBroadcaster", "EventRecorder"]

log = get_logger(__name__)

AGGREGATION_WINDOW = 6 * 60.0  # client-go tools/events finishTime
SERIES_COALESCE = 0.0  # minimum spacing between two writes of one series
SERIES_REFRESH = 10 * 60.0  # one prompt patch of a series' budget comes back this often
PATCH_BUDGET = {"Normal": 3, "Warning": 0}  # prompt patches per series
MAX_NOTE_BYTES = 1024  # events.k8s.io/v1 validation: note must be under 1 kB
MAX_FIELD = 128  # reason, action, reportingInstance limits
_TRANSIENT = (TooManyRequests, ServerError, TransportError, TimeoutError, OSError)

EVENTS_TOTAL = Counter(
    "event_recorder_writes_total",
    "Event API writes by the event recorder: create (a new Event) or patch (a series update).",
    ["verb", "result"],
    registry=registry,
)
DROPPED_TOTAL = Counter(
    "event_recorder_dropped_total",
    "Events that were never written: buffer_full (too many pending series) or write_failed.",
    ["reason"],
    registry=registry,
)

EventType = Literal["Normal", "Warning"]
_SeriesKey = tuple[str, ...]


@dataclass
class _Series:
    namespace: str
    body: dict[str, Any]  # the Event to create (without name/eventTime/series)
    count: int
    first: datetime
    last: datetime
    last_mono: float
    name: str | None = None  # set once created
    written_count: int = 0
    last_write: float = 0.0  # monotonic time of the last write
    tokens: float = 0.0  # prompt patches left (refilled over time, see the module docstring)
    token_time: float = 0.0


def _truncate_bytes(text: str, limit: int) -> str:
    raw = text.encode()
    if len(raw) <= limit:
        return text
    return raw[: limit - 3].decode("utf-8", "ignore") + "..."


def _reference(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    kind, name = obj.get("kind"), meta.get("name")
    if not kind or not name:
        raise ValueError(
            "an event needs an object with kind and metadata.name "
            f"(got kind={kind!r}, name={name!r}); set apiVersion/kind on objects read from a List"
        )
    ref = {"apiVersion": obj.get("apiVersion", ""), "kind": kind, "name": name}
    for src, dst in (("namespace", "namespace"), ("uid", "uid"), ("resourceVersion", "resourceVersion")):
        if meta.get(src):
            ref[dst] = meta[src]
    return ref


class EventBroadcaster:
    """Holds every series and writes the due ones; one per manager, shared by its recorders."""

    def __init__(
        self,
        client: Client,
        *,
        clock: Clock | None = None,
        max_pending: int = 1000,
        max_series: int = 4096,
        aggregation_window: float = AGGREGATION_WINDOW,
        series_coalesce: float = SERIES_COALESCE,
        series_refresh: float = SERIES_REFRESH,
        retries: int = 3,
    ) -> None:
        if series_coalesce < 0 or series_refresh < series_coalesce:
            raise ValueError(
                f"series_coalesce ({series_coalesce}) must be >= 0 and series_refresh "
                f"({series_refresh}) at least as long"
            )
        self.client = client
        self.clock: Clock = clock or RealClock()
        self.max_pending = max_pending
        self.max_series = max_series
        self.aggregation_window = aggregation_window
        self.series_coalesce = series_coalesce
        self.series_refresh = series_refresh
        self.retries = retries
        self._series: OrderedDict[_SeriesKey, _Series] = OrderedDict()
        # New series waiting for their create, oldest first (bounded by max_pending) ...
        self._creates: OrderedDict[_SeriesKey, None] = OrderedDict()
        # ... and created series with a newer count, each due at a time (heap; stale entries skipped).
        self._patches: dict[_SeriesKey, float] = {}
        self._due: list[tuple[float, int, _SeriesKey]] = []
        self._flushing = 0
        self._inflight: _SeriesKey | None = None
        # asyncio events (not anyio's) so a broadcaster can be built outside a running loop.
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._drained = asyncio.Event()
        self._drained.set()
        self._seq = itertools.count()
        self._hostname = socket.gethostname()

    def recorder(self, component: str, instance: str | None = None) -> EventRecorder:
        """A recorder reporting as ``component`` (``reportingController``)."""
        if not component:
            raise ValueError("an event recorder needs a component name (reportingController)")
        inst = instance or f"{component}-{self._hostname}"
        return EventRecorder(self, component, inst[:MAX_FIELD])

    @property
    def pending(self) -> int:
        """Series with something unwritten: new ones and deferred count updates."""
        return len(self._creates) + len(self._patches)

    @property
    def deferred(self) -> int:
        """Created series whose newer count waits for its pacing (see the module docstring)."""
        return len(self._patches)

    @property
    def idle(self) -> bool:
        """Nothing is being written and nothing is due now (paced count updates may be deferred)."""
        return self._idle.is_set() and not self._patch_due()

    async def wait_idle(self) -> None:
        """Return once everything due now is written; paced count updates may still be deferred."""
        while True:
            await self._idle.wait()
            if not self._patch_due():
                return
            self._wake()  # time moved past a deferred patch since the writer went idle

    def _patch_due(self) -> bool:
        due = self._due
        while due and self._patches.get(due[0][2]) != due[0][0]:
            heapq.heappop(due)  # superseded or already written
        return bool(due) and due[0][0] <= self.clock.now()

    async def flush(self) -> None:
        """Write every pending create and count update now, pacing aside (for shutdown and tests).

        Needs :meth:`run` to be running; callers bound the wait (the manager uses its graceful
        shutdown timeout).
        """
        self._flushing += 1
        try:
            while self.pending or not self._idle.is_set():
                self._drained.clear()
                self._wake()
                await self._drained.wait()
        finally:
            self._flushing -= 1

    # -- producer side (synchronous, never blocks) ---------------------------------------------

    def _record(self, key: _SeriesKey, namespace: str, body: dict[str, Any]) -> None:
        now, wall = self.clock.now(), self.clock.utcnow()
        series = self._series.get(key)
        if series is not None and (now - series.last_mono <= self.aggregation_window or key in self._patches):
            series.count += 1
            series.last, series.last_mono = wall, now
            self._series.move_to_end(key)
        else:
            series = _Series(namespace, body, 1, wall, wall, now)
            self._series[key] = series
            self._series.move_to_end(key)
        if key in self._creates or key in self._patches or key == self._inflight:
            return  # the pending write carries the new count, or schedules the next one
        if series.name is not None:
            self._schedule_patch(key, series, now)
            return
        if len(self._creates) >= self.max_pending:
            DROPPED_TOTAL.labels("buffer_full").inc()
            log.warning(
                "event buffer full, dropping event",
                reason=body["reason"],
                regarding=body["regarding"].get("name"),
                pending=len(self._creates),
            )
            if series.count == 1:
                del self._series[key]
            return
        self._creates[key] = None
        self._wake()
        self._evict()

    def _schedule_patch(self, key: _SeriesKey, series: _Series, now: float) -> None:
        # The next patch: once pacing allows, or once the series has been quiet for the window.
        earliest = max(now, series.last_write + self.series_coalesce)
        tokens = self._refill(series, now)
        if tokens >= 1.0:
            due = earliest
        else:
            refilled = series.token_time + (1.0 - tokens) * self.series_refresh
            due = max(earliest, min(refilled, now + self.aggregation_window))
        self._patches[key] = due
        heapq.heappush(self._due, (due, next(self._seq), key))
        self._wake()

    def _refill(self, series: _Series, now: float) -> float:
        cap = float(PATCH_BUDGET[series.body["type"]])
        series.tokens = min(cap, series.tokens + (now - series.token_time) / self.series_refresh)
        series.token_time = now
        return series.tokens

    def _wake(self) -> None:
        self._idle.clear()
        self._wakeup.set()

    def _evict(self) -> None:
        now = self.clock.now()
        while len(self._series) > self.max_series:
            key, series = next(iter(self._series.items()))
            if key in self._creates or key in self._patches:
                break
            del self._series[key]
        for key in list(itertools.islice(self._series, 8)):  # expire a few stale ones per call
            series = self._series[key]
            if (
                key not in self._creates
                and key not in self._patches
                and now - series.last_mono > self.aggregation_window
            ):
                del self._series[key]

    # -- writer side ---------------------------------------------------------------------------

    def _next(self) -> tuple[_SeriesKey | None, float | None]:
        """The next series to write now, else how long until one is due (None: nothing pending)."""
        if self._creates:
            key, _ = self._creates.popitem(last=False)
            return key, None
        due = self._due
        if not self._patch_due() and not (due and self._flushing):
            return None, (due[0][0] - self.clock.now()) if due else None
        _, _, key = heapq.heappop(due)
        del self._patches[key]
        return key, None

    async def run(self) -> None:
        """Write due series until cancelled (the manager runs this as a runnable)."""
        while True:
            key, wait = self._next()
            if key is None:
                self._idle.set()
                if not self.pending:
                    self._drained.set()
                self._wakeup.clear()
                await self._sleep(wait)
                continue
            self._idle.clear()  # a paced patch that came due while idle
            series = self._series.get(key)
            if series is not None:
                self._inflight = key
                try:
                    await self._write(key, series)
                finally:
                    self._inflight = None

    async def _sleep(self, seconds: float | None) -> None:
        """Until woken by a new record or flush, or until ``seconds`` (the next due patch) pass."""
        if seconds is None:
            await self._wakeup.wait()
            return
        woken = asyncio.ensure_future(self._wakeup.wait())
        timer = asyncio.ensure_future(self.clock.sleep(seconds))
        try:
            await asyncio.wait({woken, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            woken.cancel()
            timer.cancel()

    def _new_name(self, regarding: str) -> str:
        stamp = int(self.clock.utcnow().timestamp() * 1e9) + next(self._seq)
        return f"{regarding[:200]}.{stamp:x}"

    def _series_field(self, series: _Series) -> dict[str, Any]:
        return {"count": series.count, "lastObservedTime": format_micro_time(series.last)}

    async def _write(self, key: _SeriesKey, series: _Series) -> None:
        count = series.count
        created = series.name is None
        for attempt in range(self.retries + 1):
            try:
                if series.name is not None:
                    try:
                        await self.client.patch(
                            resources.EVENTS,
                            series.name,
                            {"series": self._series_field(series)},
                            series.namespace,
                        )
                        EVENTS_TOTAL.labels("patch", "success").inc()
                        self._written(key, series, count, created=False)
                        return
                    except NotFound:
                        series.name = None  # expired (events have a 1 h TTL) or deleted: start over
                await self._create(series)
                EVENTS_TOTAL.labels("create", "success").inc()
                self._written(key, series, count, created=created)
                return
            except _TRANSIENT as err:
                if attempt == self.retries:
                    self._failed(series, err)
                    return
                log.info("event write failed, retrying", reason=series.body["reason"], error=str(err))
                await self.clock.sleep(min(2.0**attempt, 10.0))
            except (ApiError, ValueError) as err:
                self._failed(series, err)
                return

    def _written(self, key: _SeriesKey, series: _Series, count: int, *, created: bool) -> None:
        now = self.clock.now()
        series.written_count = count
        series.last_write = now
        if created:
            series.tokens, series.token_time = float(PATCH_BUDGET[series.body["type"]]), now
        else:
            series.tokens = max(0.0, self._refill(series, now) - 1.0)
        if series.count > count and key not in self._patches and key not in self._creates:
            self._schedule_patch(key, series, now)  # repeats arrived while this write was in flight

    async def _create(self, series: _Series) -> None:
        body = dict(series.body)
        body["eventTime"] = format_micro_time(series.first)
        if series.count > 1:
            body["series"] = self._series_field(series)
        for _ in range(2):
            name = self._new_name(series.body["regarding"]["name"])
            body["metadata"] = {"name": name, "namespace": series.namespace}
            try:
                await self.client.create(resources.EVENTS, body, series.namespace)
            except AlreadyExists:
                continue
            series.name = name
            return
        raise ApiError(409, "AlreadyExists", "could not find a free event name")

    def _failed(self, series: _Series, err: Exception) -> None:
        EVENTS_TOTAL.labels("create" if series.name is None else "patch", "error").inc()
        DROPPED_TOTAL.labels("write_failed").inc()
        log.error(
            "could not write event",
            reason=series.body["reason"],
            regarding=series.body["regarding"].get("name"),
            namespace=series.namespace,
            error=str(err),
        )


class EventRecorder:
    """Emits events for one component; obtain it from ``Manager.event_recorder(component)``."""

    def __init__(self, broadcaster: EventBroadcaster, component: str, instance: str) -> None:
        self._broadcaster = broadcaster
        self.component = component
        self.instance = instance

    def event(
        self,
        obj: dict[str, Any],
        type_: EventType,
        reason: str,
        message: str,
        *,
        action: str | None = None,
    ) -> None:
        """Record an event about ``obj``; returns immediately, the write happens in the background.

        ``action`` (required by ``events.k8s.io/v1``) defaults to ``reason``.
        """
        if type_ not in ("Normal", "Warning"):
            raise ValueError(f"event type must be 'Normal' or 'Warning', not {type_!r}")
        if not reason or len(reason) > MAX_FIELD:
            raise ValueError(f"event reason must be 1..{MAX_FIELD} characters, got {reason!r}")
        act = (action or reason)[:MAX_FIELD]
        regarding = _reference(obj)
        note = _truncate_bytes(message, MAX_NOTE_BYTES)
        namespace = regarding.get("namespace") or "default"
        body = {
            "apiVersion": resources.EVENTS.api_version,
            "kind": resources.EVENTS.kind,
            "regarding": regarding,
            "reason": reason,
            "action": act,
            "note": note,
            "type": type_,
            "reportingController": self.component,
            "reportingInstance": self.instance,
        }
        # client-go's getKey: the note is not part of it (a burst of "Created worker Pod X",
        # "Created worker Pod Y" ... is one series, shown with the first note).
        key: _SeriesKey = (
            regarding.get("apiVersion", ""),
            regarding["kind"],
            namespace,
            regarding["name"],
            regarding.get("uid", ""),
            reason,
            act,
            type_,
            self.component,
            self.instance,
        )
        self._broadcaster._record(key, namespace, body)
