"""Field errors and the ``Invalid`` status they add up to, worded as apimachinery words them.

A validating webhook that rejects an object answers with the same ``metav1.Status`` the API
server's own validation would (``422 Invalid``, one cause per field), because kube-apiserver
passes that status on to the client: ``kubectl`` and client libraries show the message, and
callers branch on the reason and read the causes' field paths.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["InvalidField", "StatusError", "invalid"]


def _value_text(value: Any) -> str:
    """The bad value as apimachinery prints it: strings quoted, simple values bare.

    Go prints a struct with ``%#v``; there is no Go struct here, so a mapping or list is printed
    as compact JSON (docs/differences.md).
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


@dataclass(frozen=True)
class InvalidField:
    """``field.Invalid(path, value, detail)``: one field holds a value that is not allowed."""

    path: str
    value: Any
    detail: str

    def body(self) -> str:
        text = f"Invalid value: {_value_text(self.value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.path}: {self.body()}"

    def cause(self) -> dict[str, str]:
        return {"reason": "FieldValueInvalid", "message": self.body(), "field": self.path}


class StatusError(Exception):
    """An error that carries the ``metav1.Status`` to answer with (apimachinery's ``APIStatus``)."""

    def __init__(self, status: dict[str, Any]) -> None:
        super().__init__(str(status.get("message", "")))
        self.status = status


def invalid(group: str, kind: str, name: str, errors: list[InvalidField]) -> StatusError:
    """``apierrors.NewInvalid``: 422 with the errors as causes, the message naming every one."""
    qualified = f"{kind}.{group}" if group else kind
    if len(errors) == 1:
        listed = str(errors[0])
    else:
        listed = "[" + ", ".join(str(e) for e in errors) + "]"
    message = f'{qualified} "{name}" is invalid: {listed}'
    return StatusError(
        {
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": "Invalid",
            "details": {"name": name, "group": group, "kind": kind, "causes": [e.cause() for e in errors]},
            "code": 422,
        }
    )
