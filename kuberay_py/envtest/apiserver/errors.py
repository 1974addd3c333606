"""Kubernetes ``Status`` errors, worded the way kube-apiserver words them.

Clients branch on ``code`` and ``reason`` (client-go's ``IsNotFound``/``IsConflict``/``IsGone``),
and tests compare messages with what a real server says, so every failure path of the built-in
server raises one of these and the HTTP layer turns it into a ``Status`` body.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Cause", "StatusError"]

Cause = dict[str, str]


class StatusError(Exception):
    """A failed request; ``body()`` is the ``metav1.Status`` kube-apiserver would send."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        *,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.retry_after = retry_after

    def body(self) -> dict[str, Any]:
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details is not None:
            status["details"] = self.details
        status["code"] = self.code
        return status

    # -- constructors mirroring k8s.io/apimachinery/pkg/api/errors ---------------------------------

    @staticmethod
    def _details(name: str | None, group: str, kind: str) -> dict[str, Any]:
        details: dict[str, Any] = {}
        if name:
            details["name"] = name
        if group:
            details["group"] = group
        details["kind"] = kind
        return details

    @classmethod
    def not_found(cls, group: str, plural: str, name: str) -> StatusError:
        qualified = f"{plural}.{group}" if group else plural
        return cls(404, "NotFound", f'{qualified} "{name}" not found', cls._details(name, group, plural))

    @classmethod
    def no_route(cls) -> StatusError:
        return cls(404, "NotFound", "the server could not find the requested resource", {})

    @classmethod
    def already_exists(cls, group: str, plural: str, name: str) -> StatusError:
        qualified = f"{plural}.{group}" if group else plural
        return cls(
            409, "AlreadyExists", f'{qualified} "{name}" already exists', cls._details(name, group, plural)
        )

    @classmethod
    def conflict(cls, group: str, plural: str, name: str, why: str) -> StatusError:
        qualified = f"{plural}.{group}" if group else plural
        return cls(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on {qualified} "{name}": {why}',
            cls._details(name, group, plural),
        )

    @classmethod
    def stale(cls, group: str, plural: str, name: str) -> StatusError:
        return cls.conflict(
            group,
            plural,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )

    @classmethod
    def invalid(cls, group: str, kind: str, name: str, causes: list[Cause]) -> StatusError:
        qualified = f"{kind}.{group}" if group else kind
        # Every cause is kept, but the message lists each text once (field.ErrorList.ToAggregate).
        texts = list(
            dict.fromkeys(f"{c['field']}: {c['message']}" if c.get("field") else c["message"] for c in causes)
        )
        joined = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
        details = cls._details(name, group, kind)
        details["causes"] = causes
        return cls(422, "Invalid", f'{qualified} "{name}" is invalid: {joined}', details)

    @classmethod
    def unprocessable(cls, server_message: str) -> StatusError:
        """``NewGenericServerResponse(422, ...)``, what a JSON patch that cannot be applied gets."""
        return cls(
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
            {"causes": [{"reason": "UnexpectedServerResponse", "message": server_message}]},
        )

    @classmethod
    def bad_request(cls, message: str) -> StatusError:
        return cls(400, "BadRequest", message)

    @classmethod
    def forbidden(cls, group: str, plural: str, name: str, why: str) -> StatusError:
        qualified = f"{plural}.{group}" if group else plural
        return cls(
            403, "Forbidden", f'{qualified} "{name}" is forbidden: {why}', cls._details(name, group, plural)
        )

    @classmethod
    def method_not_allowed(cls, method: str) -> StatusError:
        return cls(
            405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {}
        )

    @classmethod
    def unsupported_media_type(cls, content_type: str, accepted: list[str]) -> StatusError:
        return cls(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: "
            + ", ".join(accepted),
            None,
        )

    @classmethod
    def too_large(cls, limit: int) -> StatusError:
        return cls(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")

    @classmethod
    def expired(cls, message: str) -> StatusError:
        return cls(410, "Expired", message)

    @classmethod
    def internal(cls, message: str) -> StatusError:
        return cls(
            500, "InternalError", f"Internal error occurred: {message}", {"causes": [{"message": message}]}
        )


def field_cause(reason: str, field: str, message: str) -> Cause:
    """One ``StatusCause``; ``reason`` is a ``field.ErrorType`` string such as ``FieldValueInvalid``."""
    return {"reason": reason, "message": message, "field": field}
