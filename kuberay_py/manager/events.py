"""Kubernetes Events (``events.k8s.io/v1``) from reconcilers: aggregated, asynchronous, never fatal.

A reconciler that emits "CreatedWorkerPod" on every pass must not create thousands of Event
objects, and must not slow down or fail because the API server is slow to store them. So, like
client-go's ``tools/events`` broadcaster:

* **Aggregation.** Events with the same regarding object, reason, type, action, note and
  reporting controller are one *series*. The first creates an Event; repeats within
  ``aggregation_window`` (client-go's 6 minutes, measured from the last occurrence) patch
  ``series.count`` and ``series.lastObservedTime`` of that same object. A repeat after the window
  starts a new Event.
* **Asynchronous and bounded.** :meth:`EventRecorder.event` only updates an in-memory series and
  marks it dirty; one background task (:meth:`EventBroadcaster.run`, started by the manager)
  writes dirty series. A burst of identical events collapses into one write carrying the latest
  count. When ``max_pending`` distinct series are waiting, new ones are dropped and counted in
  ``event_recorder_dropped_total{reason="buffer_full"}``; the caller never blocks.
* **Never fatal.** Write failures are logged and counted; transient ones (429, 5xx, transport)
  are retried a few times with back-off. Nothing is raised into the reconcile, except for a
  programming error in the call itself (bad ``type_``, empty reason), which fails loudly.
"""

from __future__ import annotations

import asyncio
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
    """Holds every series and writes the dirty ones; one per manager, shared by its recorders."""

    def __init__(
        self,
        client: Client,
        *,
        clock: Clock | None = None,
        max_pending: int = 1000,
        max_series: int = 4096,
        aggregation_window: float = AGGREGATION_WINDOW,
        retries: int = 3,
    ) -> None:
        self.client = client
        self.clock: Clock = clock or RealClock()
        self.max_pending = max_pending
        self.max_series = max_series
        self.aggregation_window = aggregation_window
        self.retries = retries
        self._series: OrderedDict[_SeriesKey, _Series] = OrderedDict()
        self._dirty: OrderedDict[_SeriesKey, None] = OrderedDict()
        # asyncio events (not anyio's) so a broadcaster can be built outside a running loop.
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
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
        return len(self._dirty)

    async def wait_idle(self) -> None:
        """Return once every pending series has been written (or given up on)."""
        await self._idle.wait()

    # -- producer side (synchronous, never blocks) ---------------------------------------------

    def _record(self, key: _SeriesKey, namespace: str, body: dict[str, Any]) -> None:
        now, wall = self.clock.now(), self.clock.utcnow()
        series = self._series.get(key)
        if series is not None and now - series.last_mono <= self.aggregation_window:
            series.count += 1
            series.last, series.last_mono = wall, now
            self._series.move_to_end(key)
        else:
            series = _Series(namespace, body, 1, wall, wall, now)
            self._series[key] = series
            self._series.move_to_end(key)
        if key in self._dirty:
            return  # the pending write will carry the new count
        if len(self._dirty) >= self.max_pending:
            DROPPED_TOTAL.labels("buffer_full").inc()
            log.warning("event buffer full, dropping event", reason=body["reason"],
                        regarding=body["regarding"].get("name"), pending=len(self._dirty))
            if series.name is None and series.count == 1:
                del self._series[key]
            return
        self._dirty[key] = None
        self._idle.clear()
        self._wakeup.set()
        self._evict()

    def _evict(self) -> None:
        now = self.clock.now()
        while len(self._series) > self.max_series:
            key, series = next(iter(self._series.items()))
            if key in self._dirty:
                break
            del self._series[key]
        for key in list(itertools.islice(self._series, 8)):  # expire a few stale ones per call
            series = self._series[key]
            if key not in self._dirty and now - series.last_mono > self.aggregation_window:
                del self._series[key]

    # -- writer side ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Write dirty series until cancelled (the manager runs this as a runnable)."""
        while True:
            if not self._dirty:
                self._idle.set()
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            key, _ = self._dirty.popitem(last=False)
            series = self._series.get(key)
            if series is not None:
                await self._write(series)

    def _new_name(self, regarding: str) -> str:
        stamp = int(self.clock.utcnow().timestamp() * 1e9) + next(self._seq)
        return f"{regarding[:200]}.{stamp:x}"

    def _series_field(self, series: _Series) -> dict[str, Any]:
        return {"count": series.count, "lastObservedTime": format_micro_time(series.last)}

    async def _write(self, series: _Series) -> None:
        count = series.count
        for attempt in range(self.retries + 1):
            try:
                if series.name is not None:
                    try:
                        await self.client.patch(resources.EVENTS, series.name,
                                                {"series": self._series_field(series)}, series.namespace)
                        EVENTS_TOTAL.labels("patch", "success").inc()
                        series.written_count = count
                        return
                    except NotFound:
                        series.name = None  # expired (events have a 1 h TTL) or deleted: start over
                await self._create(series)
                EVENTS_TOTAL.labels("create", "success").inc()
                series.written_count = count
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
        log.error("could not write event", reason=series.body["reason"],
                  regarding=series.body["regarding"].get("name"), namespace=series.namespace, error=str(err))


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
        key: _SeriesKey = (
            regarding.get("apiVersion", ""), regarding["kind"], namespace, regarding["name"],
            regarding.get("uid", ""), reason, act, type_, note, self.component,
        )
        self._broadcaster._record(key, namespace, body)
