"""Typed API errors, built from the ``Status`` object the API server sends with every failure.

Reconcilers branch on *kinds* of failure (``except NotFound``, ``except Conflict``), exactly like
controller-runtime code calls ``apierrors.IsNotFound(err)``. The mapping mirrors apimachinery's
``errors.FromObject`` / ``reasonForError``: the Status ``reason`` decides first, the HTTP code is
the fallback (so a 409 whose reason is ``AlreadyExists`` is :class:`AlreadyExists`, never
:class:`Conflict`; they are deliberately siblings, not parent and child, because retrying a
create that already exists is a different decision from retrying a stale update).
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = [
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "MethodNotAllowed",
    "NotFound",
    "ServerError",
    "TooManyRequests",
    "TransportError",
    "Unauthorized",
    "error_from_response",
    "error_from_status",
]


class ApiError(Exception):
    """A failed API call. ``status`` is the HTTP code (0 when no response arrived)."""

    def __init__(self, status: int, reason: str, message: str, body: dict[str, Any] | None = None) -> None:
        super().__init__(f"{status} {reason}: {message}" if status else f"{reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body

    @property
    def details(self) -> dict[str, Any]:
        """The Status ``details`` (name, kind, causes, retryAfterSeconds), or ``{}``."""
        details = (self.body or {}).get("details")
        return details if isinstance(details, dict) else {}

    @property
    def causes(self) -> list[dict[str, Any]]:
        """The Status ``details.causes``: ``{"reason", "message", "field"}`` each."""
        causes = self.details.get("causes")
        return [c for c in causes if isinstance(c, dict)] if isinstance(causes, list) else []

    def has_cause(self, reason: str) -> bool:
        """apimachinery's ``HasStatusCause``: e.g. ``NamespaceTerminating`` on a 403 from
        NamespaceLifecycle admission, which no retry in that namespace can get past."""
        return any(c.get("reason") == reason for c in self.causes)


class BadRequest(ApiError):
    """400: the request itself is malformed (e.g. a bad selector or an unparsable patch)."""


class Unauthorized(ApiError):
    """401: credentials missing or rejected."""


class Forbidden(ApiError):
    """403: RBAC denies the verb (also used for namespace-terminating rejections)."""


class NotFound(ApiError):
    """404: the object (or the resource type itself) does not exist."""


class MethodNotAllowed(ApiError):
    """405: the verb is not supported on that resource."""


class Conflict(ApiError):
    """409 Conflict: the resourceVersion was stale; re-read and retry."""


class AlreadyExists(ApiError):
    """409 AlreadyExists: a create hit an existing name."""


class Gone(ApiError):
    """410 Expired/Gone: the resourceVersion or continue token is too old; relist."""


class Invalid(ApiError):
    """422: validation failed. ``causes`` lists ``{"field", "reason", "message"}`` per problem."""


class TooManyRequests(ApiError):
    """429: throttled by API priority and fairness; ``retry_after`` is the server's advice in seconds."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        body: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(status, reason, message, body)
        self.retry_after = retry_after


class ServerError(ApiError):
    """5xx: the server failed (internal error, timeout, unavailable)."""


class TransportError(ApiError):
    """No usable response: connection refused/reset, timeout, TLS failure, or a garbage stream."""

    def __init__(self, message: str, reason: str = "TransportError") -> None:
        super().__init__(0, reason, message, None)


_BY_REASON: dict[str, type[ApiError]] = {
    "BadRequest": BadRequest,
    "Unauthorized": Unauthorized,
    "Forbidden": Forbidden,
    "NotFound": NotFound,
    "MethodNotAllowed": MethodNotAllowed,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Gone": Gone,
    "Expired": Gone,
    "Invalid": Invalid,
    "TooManyRequests": TooManyRequests,
}

_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}


def _parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None  # an HTTP-date; the API server never sends one, so ignore rather than guess
    return max(0.0, seconds)


def error_from_status(
    status: int, body: dict[str, Any] | None, *, retry_after_header: str | None = None
) -> ApiError:
    """Build the typed error for an HTTP status and a decoded body (a ``Status`` or anything)."""
    reason = ""
    message = ""
    if body is not None and body.get("kind") == "Status":
        reason = str(body.get("reason") or "")
        message = str(body.get("message") or "")
        code = body.get("code")
        if isinstance(code, int) and code >= 400:
            status = code
    cls = _BY_REASON.get(reason) or _BY_CODE.get(status)
    if cls is None:
        cls = ServerError if status >= 500 else ApiError
    if not reason:
        reason = cls.__name__ if cls not in (ApiError, ServerError) else f"HTTP{status}"
    if not message:
        message = f"the server responded with status {status}"
    if cls is TooManyRequests:
        retry_after = _parse_retry_after(retry_after_header)
        if retry_after is None and body is not None:
            details = body.get("details")
            if isinstance(details, dict) and isinstance(details.get("retryAfterSeconds"), int | float):
                retry_after = float(details["retryAfterSeconds"])
        return TooManyRequests(status, reason, message, body, retry_after)
    return cls(status, reason, message, body)


def error_from_response(status: int, raw: bytes, *, retry_after_header: str | None = None) -> ApiError:
    """Like :func:`error_from_status` for a raw body that may not be JSON (proxies send HTML)."""
    body: dict[str, Any] | None
    try:
        decoded = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError:
        decoded = None
    body = decoded if isinstance(decoded, dict) else None
    error = error_from_status(status, body, retry_after_header=retry_after_header)
    if body is None and raw and error.message.startswith("the server responded"):
        snippet = raw[:200].decode("utf-8", "replace").strip()
        error.message = f"{error.message}: {snippet}"
        error.args = (f"{error.status} {error.reason}: {error.message}",)
    return error
