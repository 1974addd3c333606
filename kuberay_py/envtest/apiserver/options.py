"""Query-parameter rules shared by every verb: ListOptions, dryRun, fieldValidation, managers.

kube-apiserver validates these before touching storage and answers with a 422 naming the
options kind (``ListOptions.meta.k8s.io "" is invalid: ...``) or a 400, so the built-in server
does the same in one place.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from .errors import StatusError

__all__ = [
    "TRUE",
    "boolean",
    "dry_run",
    "field_manager",
    "field_validation",
    "int_param",
    "validate_list_options",
]

TRUE = {"true", "1", "t", "True", "TRUE", "T"}


def boolean(q: Any, key: str) -> bool:
    return q.get(key) in TRUE


def _forbidden(field: str, detail: str) -> dict[str, str]:
    return {"reason": "FieldValueForbidden", "field": field, "message": f"Forbidden: {detail}"}


def _not_supported(field: str, value: str, supported: tuple[str, ...]) -> dict[str, str]:
    values = ", ".join(f'"{v}"' for v in supported)
    return {
        "reason": "FieldValueNotSupported",
        "field": field,
        "message": f'Unsupported value: "{value}": supported values: {values}',
    }


def validate_list_options(q: Any, watch: bool) -> None:
    """apimachinery's ``ValidateListOptions`` (WatchList on, as in kube-apiserver 1.36).

    A watch may ask for ``sendInitialEvents`` only with ``resourceVersionMatch=NotOlderThan``
    (bookmarks are not required: without them no initial-events-end bookmark is sent); a list may
    not ask for it at all. Causes come in upstream's order.
    """
    causes: list[dict[str, str]] = []
    match = q.get("resourceVersionMatch") or ""
    send_initial = q.get("sendInitialEvents")
    rv = q.get("resourceVersion") or ""
    continue_token = q.get("continue") or ""
    rvm = "resourceVersionMatch"
    if watch:
        if send_initial is not None and match != "NotOlderThan":
            causes.append(
                _forbidden(rvm, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan")
            )
        if match:
            if send_initial is None:
                causes.append(
                    _forbidden(
                        rvm,
                        "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                    )
                )
            if match != "NotOlderThan":
                causes.append(_not_supported(rvm, match, ("NotOlderThan",)))
            if continue_token:
                causes.append(_forbidden(rvm, "resourceVersionMatch is forbidden when continue is provided"))
    else:
        if match:
            if not rv:
                causes.append(
                    _forbidden(rvm, "resourceVersionMatch is forbidden unless resourceVersion is provided")
                )
            if continue_token:
                causes.append(_forbidden(rvm, "resourceVersionMatch is forbidden when continue is provided"))
            if match not in ("Exact", "NotOlderThan"):
                causes.append(_not_supported(rvm, match, ("Exact", "NotOlderThan", "")))
            if match == "Exact" and rv == "0":
                causes.append(
                    _forbidden(rvm, 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"')
                )
        if send_initial is not None:
            causes.append(_forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    if causes:
        raise StatusError.invalid("meta.k8s.io", "ListOptions", "", causes)


def field_manager(request: web.Request, q: Any) -> str:
    """``managerOrUserAgent``: the fieldManager parameter, else the User-Agent's product name."""
    manager = q.get("fieldManager")
    if manager:
        return str(manager)
    agent = request.headers.get("User-Agent", "")
    return agent.split("/", 1)[0].strip() or "unknown"


def dry_run(q: Any, verb: str) -> bool:
    """``ValidateCreateOptions`` & co.: only ``All`` is a dry-run value (422 on the options kind)."""
    values = q.getall("dryRun", [])
    for v in values:
        if v != "All":
            kind = {
                "create": "CreateOptions",
                "update": "UpdateOptions",
                "patch": "PatchOptions",
                "delete": "DeleteOptions",
                "deletecollection": "DeleteOptions",
            }.get(verb, "ListOptions")
            raise StatusError.invalid(
                "meta.k8s.io",
                kind,
                "",
                [
                    {
                        "reason": "FieldValueNotSupported",
                        "field": "dryRun",
                        "message": f'Unsupported value: "{v}": supported values: "All"',
                    }
                ],
            )
    return bool(values)


def field_validation(q: Any) -> str:
    v = q.get("fieldValidation", "")
    if v not in ("", "Ignore", "Warn", "Strict"):
        raise StatusError.bad_request(
            f'fieldValidation: Unsupported value: "{v}": supported values: "Ignore", "Warn", "Strict"'
        )
    return str(v)


def int_param(q: Any, key: str) -> int | None:
    v = q.get(key)
    if v in (None, ""):
        return None
    try:
        return int(v)
    except ValueError:
        raise StatusError.bad_request(f'invalid {key}: "{v}"') from None
