"""One request log for both kinds of API server an Environment can run.

Tests count what the operator asked the API server (no writes when converged, one create per Pod
across a restart, dashboards reached through ``services/proxy``). The built-in server keeps those
records itself; a real kube-apiserver's are read from its audit log
(:class:`~.audit.AuditRequestLog`). Both answer through :class:`ServerRequestLog`, with
:class:`~.apiserver.faults.RequestRecord` for each request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .apiserver.faults import RequestLog, RequestRecord

__all__ = ["BuiltinRequestLog", "ServerRequestLog"]


class ServerRequestLog(Protocol):
    async def clear(self) -> None:
        """Forget every request the server received before this call."""

    async def records(self) -> list[RequestRecord]:
        """The requests since the last :meth:`clear` (from the start of the Environment), each
        one whose response was complete before this call included."""


@dataclass
class BuiltinRequestLog:
    """The built-in server's log, which records each request before its response goes out."""

    log: RequestLog

    async def clear(self) -> None:
        self.log.clear()

    async def records(self) -> list[RequestRecord]:
        return list(self.log.records)
