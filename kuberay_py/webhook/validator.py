"""A validating handler built from create/update/delete checks (controller-runtime's ``Validator``).

The checks receive the decoded objects and either return warnings or raise: a
:class:`~kuberay_py.webhook.fielderrors.StatusError` is answered with its own status (so an
``Invalid`` keeps its 422 and causes), any other exception with ``403 Forbidden`` and its text.
Deletes are let through unless the validator has a delete check, CONNECT requests always.
Requests for another kind get ``400``: the webhook configuration routes the wrong resource here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kuberay_py.log import get_logger

from .admission import AdmissionRequest, AdmissionResponse, Handler, allowed, denied, errored, from_status
from .fielderrors import StatusError

__all__ = ["Validator", "validating_handler"]

log = get_logger(__name__)

Obj = dict[str, Any]


@dataclass(frozen=True)
class Validator:
    """What one kind's validating webhook checks; ``group``/``kind`` say which objects it accepts."""

    group: str
    kind: str
    validate_create: Callable[[Obj], list[str]]
    validate_update: Callable[[Obj, Obj], list[str]]
    validate_delete: Callable[[Obj], list[str]] | None = None


def _check(validator: Validator, req: AdmissionRequest) -> AdmissionResponse:
    obj, old = req.object, req.old_object
    if req.operation == "CREATE":
        if obj is None:
            return errored(400, "there is no content to decode")
        return allowed_with(validator.validate_create(obj))
    if req.operation == "UPDATE":
        if obj is None or old is None:
            return errored(400, "there is no content to decode")
        return allowed_with(validator.validate_update(old, obj))
    if req.operation == "DELETE":
        if validator.validate_delete is None:
            return allowed()
        if old is None:
            return errored(400, "there is no content to decode")
        return allowed_with(validator.validate_delete(old))
    if req.operation == "CONNECT":  # nothing to validate, as controller-runtime
        return allowed()
    return errored(400, f'unknown operation "{req.operation}"')


def allowed_with(warnings: list[str]) -> AdmissionResponse:
    response = allowed()
    response.warnings = list(warnings)
    return response


def validating_handler(validator: Validator) -> Handler:
    """An admission handler that runs ``validator``'s check for the request's operation."""

    async def handle(req: AdmissionRequest) -> AdmissionResponse:
        kind = req.kind
        if (kind.get("group"), kind.get("kind")) != (validator.group, validator.kind):
            got = f"{kind.get('kind')}.{kind.get('group')}"
            return errored(400, f"expected {validator.kind}.{validator.group}, got {got}")
        try:
            return _check(validator, req)
        except Exception as err:
            # An APIStatus error keeps its status (an Invalid its 422 and causes); others are 403.
            response = from_status(err.status) if isinstance(err, StatusError) else denied(str(err))
            assert response.result is not None
            log.info(
                "admission denied",
                kind=validator.kind,
                name=req.name,
                namespace=req.namespace,
                operation=req.operation,
                code=response.result.get("code"),
                message=str(err),
            )
            return response

    return handle
