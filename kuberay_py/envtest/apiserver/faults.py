"""Fault injection and the request log of the built-in server.

Tests of retry, back-off and relist logic need the server to misbehave on cue (a 500 on the
third status update, a 429 with Retry-After, a watch that breaks), and benchmarks need to count
the API requests a controller makes. Both live here so the request path has one hook.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from .errors import StatusError

__all__ = ["Fault", "FaultInjector", "RequestLog", "RequestRecord"]

_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


@dataclass
class Fault:
    method: str  # "GET", "PUT", ... or "*"
    path: re.Pattern[str]
    status: int
    remaining: int
    reason: str
    message: str
    retry_after: int | None = None
    delay: float = 0.0
    hits: int = 0


@dataclass(frozen=True)
class RequestRecord:
    method: str
    path: str
    query: str
    verb: str  # get/list/watch/create/update/patch/delete/deletecollection/discovery
    resource: str  # "pods", "rayclusters.ray.io", "pods/status", "" for discovery
    namespace: str | None  # kube-apiserver's RequestInfo: a Namespace's own name for /namespaces/NAME
    status: int
    name: str = ""
    user: str = ""


class FaultInjector:
    def __init__(self) -> None:
        self.faults: list[Fault] = []

    def add(
        self,
        method: str,
        path_regex: str,
        status: int,
        count: int = 1,
        *,
        reason: str | None = None,
        message: str | None = None,
        retry_after: int | None = None,
        delay: float = 0.0,
    ) -> Fault:
        fault = Fault(
            method.upper(),
            re.compile(path_regex),
            status,
            count,
            reason or _REASONS.get(status, "Unknown"),
            message or f"injected fault: {status}",
            retry_after,
            delay,
        )
        self.faults.append(fault)
        return fault

    def match(self, method: str, path: str) -> Fault | None:
        for f in self.faults:
            if f.remaining != 0 and f.method in ("*", method) and f.path.search(path):
                f.remaining -= 1
                f.hits += 1
                return f
        return None

    def clear(self) -> None:
        self.faults.clear()

    @staticmethod
    def error(f: Fault) -> StatusError:
        return StatusError(
            f.status,
            f.reason,
            f.message,
            {"retryAfterSeconds": f.retry_after} if f.retry_after is not None else {},
            retry_after=f.retry_after,
        )


@dataclass
class RequestLog:
    records: list[RequestRecord] = field(default_factory=list)
    enabled: bool = True
    max_records: int = 200_000

    def add(self, record: RequestRecord) -> None:
        if self.enabled:
            if len(self.records) >= self.max_records:
                del self.records[: self.max_records // 2]
            self.records.append(record)

    def counts_by_verb(self, resource: str | None = None) -> Counter[str]:
        return Counter(r.verb for r in self.records if resource is None or r.resource == resource)

    def count(self, verb: str | None = None, resource: str | None = None) -> int:
        return sum(
            1
            for r in self.records
            if (verb is None or r.verb == verb) and (resource is None or r.resource == resource)
        )

    def clear(self) -> None:
        self.records.clear()
