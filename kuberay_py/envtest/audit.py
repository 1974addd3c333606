"""kube-apiserver's audit log as the real-mode request log.

The built-in server counts every request it answers (:class:`~.apiserver.faults.RequestLog`); a
real kube-apiserver keeps no such count, but its audit log is one: with a ``Metadata`` policy it
writes a JSON line per request stage with the verb, the object reference, the response code and
the user. Every real control plane is started with it (:func:`audit_args`, part of the default
flags, so control-plane reuse keys do not change), and :class:`AuditRequestLog` turns its lines
into the built-in server's :class:`~.apiserver.faults.RequestRecord`.

Why the log can be trusted to be complete: in the default ``blocking`` mode kube-apiserver writes
an event inside the request's handler chain, before the response is finished, so every request
whose response a client has read is already in the file. The reader still proves it for each read
with a marker request (``GET /version?<marker>``) it waits to see, which also settles where one
reader's window starts: a request counts when kube-apiserver received it after the window's marker.
That is what makes ``clear()`` exact and keeps a reused control plane's earlier requests out.

kube-apiserver's own loopback client (user ``system:apiserver``: leases, the ``kubernetes``
Service's endpoints, APIService availability) is not audited: the built-in server makes no such
requests, and a test counts what its clients did.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .apiserver.faults import RequestRecord

__all__ = [
    "AUDIT_POLICY",
    "MARKER_PARAM",
    "AuditRequestLog",
    "AuditWindow",
    "audit_args",
    "audit_record",
]

MARKER_PARAM = "kuberay-envtest-audit-marker"
SYNC_TIMEOUT = 30.0  # bounds a read; blocking mode makes it immediate unless the file is missing

AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  users: ["system:apiserver"]
- level: Metadata
"""

_METHODS = {
    "create": "POST",
    "update": "PUT",
    "patch": "PATCH",
    "delete": "DELETE",
    "deletecollection": "DELETE",
}
# Requests kube-apiserver treats as long-running (``BasicLongRunningRequestCheck``): they get a
# ResponseStarted event when their headers go out and a ResponseComplete one when they end.
_LONG_RUNNING_VERBS = ("watch", "proxy")
_LONG_RUNNING_SUBRESOURCES = ("attach", "exec", "proxy", "log", "portforward")


def audit_args(audit_dir: str) -> list[str]:
    """kube-apiserver flags that audit every request at ``Metadata`` level to ``audit.log`` in
    ``audit_dir`` (the policy file is written there). Rotation at 100 MB keeps one old file; the
    reader follows a rotation."""
    d = Path(audit_dir)
    d.mkdir(parents=True, exist_ok=True)
    policy = d / "policy.yaml"
    policy.write_text(AUDIT_POLICY)
    return [
        f"--audit-policy-file={policy}",
        f"--audit-log-path={d / 'audit.log'}",
        "--audit-log-format=json",
        "--audit-log-mode=blocking",
        "--audit-log-maxsize=100",
        "--audit-log-maxbackup=1",
        "--audit-log-maxage=1",
    ]


def _long_running(verb: str, subresource: str) -> bool:
    return verb in _LONG_RUNNING_VERBS or subresource in _LONG_RUNNING_SUBRESOURCES


def audit_record(event: dict[str, Any]) -> RequestRecord:
    """The built-in server's record of the request an audit event describes.

    ``resource`` is spelled as the built-in server spells it (``pods``, ``rayclusters.ray.io``,
    ``pods/status``); a request outside ``/api`` and ``/apis`` resources is ``discovery`` when it
    reads, as there.
    """
    verb = str(event.get("verb") or "")
    ref = event.get("objectRef") or {}
    uri = str(event.get("requestURI") or "")
    path, _, query = uri.partition("?")
    resource = ""
    if ref.get("resource"):
        resource = str(ref["resource"]) + (f".{ref['apiGroup']}" if ref.get("apiGroup") else "")
        resource += f"/{ref['subresource']}" if ref.get("subresource") else ""
    elif verb in ("get", "list"):
        verb = "discovery"
    if ref.get("subresource") == "proxy":
        method = {"get": "GET", "create": "POST", "update": "PUT"}.get(verb, verb.upper())
    else:
        method = _METHODS.get(verb, "GET" if verb in ("get", "list", "watch", "discovery") else verb.upper())
    return RequestRecord(
        method,
        path,
        query,
        verb,
        resource,
        ref.get("namespace") or None,
        int((event.get("responseStatus") or {}).get("code") or 0),
        name=str(ref.get("name") or ""),
        user=str((event.get("user") or {}).get("username") or ""),
    )


@dataclass
class AuditWindow:
    """Turns audit lines into one record per request received after ``since``.

    A request is recorded at its first event: ResponseComplete, or ResponseStarted for a
    long-running one (a watch is counted when it starts, as a client sees it), whose later
    ResponseComplete is then skipped. ``since`` is kube-apiserver's ``requestReceivedTimestamp``
    of a marker (RFC 3339 with fixed microseconds, so strings compare in time order).
    """

    since: str = ""
    started: set[str] = field(default_factory=set)

    def feed(self, event: dict[str, Any]) -> RequestRecord | None:
        if str(event.get("requestReceivedTimestamp") or "") < self.since:
            return None
        stage = event.get("stage")
        audit_id = str(event.get("auditID") or "")
        if stage == "ResponseStarted":
            self.started.add(audit_id)
        elif stage in ("ResponseComplete", "Panic"):
            if audit_id in self.started:
                self.started.discard(audit_id)
                return None
        else:
            return None
        return audit_record(event)


def marker_of(event: dict[str, Any]) -> str | None:
    """The marker a ``GET /version?<MARKER_PARAM>=<id>`` event carries, else ``None``."""
    uri = str(event.get("requestURI") or "")
    _, _, query = uri.partition("?")
    for part in query.split("&"):
        key, sep, value = part.partition("=")
        if sep and key == MARKER_PARAM:
            return value
    return None


class _Follower:
    """Reads a file that kube-apiserver appends to and may rotate (rename, then a new file)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._file = open(path, "rb")
        self._partial = b""

    def read_lines(self) -> list[bytes]:
        """The complete lines written since the last call (a line still being written waits)."""
        lines: list[bytes] = []
        while True:
            chunk = self._file.read()
            if chunk:
                *complete, self._partial = (self._partial + chunk).split(b"\n")
                lines += [line for line in complete if line]
                continue
            # At the end of this file: if the path names a new file now, the old one was
            # rotated away and is complete; go on with the new one from its start.
            with contextlib.suppress(FileNotFoundError):
                if os.stat(self.path).st_ino != os.fstat(self._file.fileno()).st_ino:
                    self._file.close()
                    self._file = open(self.path, "rb")
                    self._partial = b""
                    continue
            return lines

    def close(self) -> None:
        self._file.close()


class AuditRequestLog:
    """The request log of a real control plane, read from its audit log.

    ``ping(marker)`` sends ``GET /version?<MARKER_PARAM>=<marker>`` with any client of the
    control plane. :meth:`start` (done by the Environment) places the window at "now", so an
    Environment on a reused control plane never sees the previous user's requests.
    """

    def __init__(
        self, path: str, ping: Callable[[str], Awaitable[None]], *, max_records: int = 200_000
    ) -> None:
        self.path = path
        self._ping = ping
        self._follower: _Follower | None = None
        self._pending: deque[bytes] = deque()  # read, not yet looked at (after the last marker)
        self._markers: dict[str, str] = {}  # markers read by a concurrent read -> their timestamp
        self._window = AuditWindow()
        self._records: list[RequestRecord] = []
        self.max_records = max_records

    async def start(self) -> None:
        self._follower = _Follower(self.path)
        await self.clear()

    def close(self) -> None:
        if self._follower is not None:
            self._follower.close()
            self._follower = None

    async def clear(self) -> None:
        """Forget every request kube-apiserver received before this call."""
        since, events = await self._sync()
        self._window = AuditWindow(since)
        self._records.clear()
        self._feed(events)  # those received after the marker but logged before it

    async def records(self) -> list[RequestRecord]:
        """Every request received since the last :meth:`clear` whose response was complete (a
        long-running one: started) before this call, in the order kube-apiserver logged them."""
        _, events = await self._sync()
        self._feed(events)
        return list(self._records)

    def _feed(self, events: list[dict[str, Any]]) -> None:
        for event in events:
            record = self._window.feed(event)
            if record is None:
                continue
            if len(self._records) >= self.max_records:
                del self._records[: self.max_records // 2]
            self._records.append(record)

    async def _sync(self) -> tuple[str, list[dict[str, Any]]]:
        """Read up to the event of a new marker: its ``requestReceivedTimestamp``, and the events
        logged before it."""
        if self._follower is None:
            raise RuntimeError("the audit request log is not started")
        marker = uuid.uuid4().hex
        await self._ping(marker)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + SYNC_TIMEOUT
        events: list[dict[str, Any]] = []
        while True:
            self._pending.extend(self._follower.read_lines())
            while marker not in self._markers and self._pending:
                event = orjson.loads(self._pending.popleft())
                seen = marker_of(event)
                if seen is None:
                    events.append(event)
                else:  # ours, or a concurrent read's: that one finds it here
                    self._markers[seen] = str(event.get("requestReceivedTimestamp") or "")
            if marker in self._markers:
                return self._markers.pop(marker), events
            if loop.time() > deadline:
                raise TimeoutError(f"the audit event of marker {marker} did not appear in {self.path}")
            await asyncio.sleep(0.02)
