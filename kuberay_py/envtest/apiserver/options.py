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


def validate_list_options(q: Any, watch: bool) -> None:
    """``ValidateListOptions``: the rules around ``sendInitialEvents`` and ``resourceVersionMatch``."""
    causes: list[dict[str, str]] = []
    match = q.get("resourceVersionMatch")
    send_initial = q.get("sendInitialEvents")
    if send_initial is not None and send_initial in TRUE:
        if not watch:
            causes.append(
                {
                    "reason": "FieldValueForbidden",
                    "field": "sendInitialEvents",
                    "message": "Forbidden: sendInitialEvents is forbidden for list",
                }
            )
        if match != "NotOlderThan":
            causes.append(
                {
                    "reason": "FieldValueForbidden",
                    "field": "resourceVersionMatch",
                    "message": "Forbidden: sendInitialEvents requires setting resourceVersionMatch "
                    "to NotOlderThan",
                }
            )
        if not boolean(q, "allowWatchBookmarks"):
            causes.append(
                {
                    "reason": "FieldValueForbidden",
                    "field": "allowWatchBookmarks",
                    "message": "Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true",
                }
            )
    elif match:
        if watch:
            causes.append(
                {
                    "reason": "FieldValueForbidden",
                    "field": "resourceVersionMatch",
                    "message": "Forbidden: resourceVersionMatch is forbidden for watch unless "
                    "sendInitialEvents is provided",
                }
            )
        elif match not in ("Exact", "NotOlderThan"):
            causes.append(
                {
                    "reason": "FieldValueNotSupported",
                    "field": "resourceVersionMatch",
                    "message": f'Unsupported value: "{match}": supported values: "Exact", "NotOlderThan", ""',
                }
            )
        elif not q.get("resourceVersion"):
            causes.append(
                {
                    "reason": "FieldValueForbidden",
                    "field": "resourceVersionMatch",
                    "message": "Forbidden: resourceVersionMatch is forbidden unless resourceVersion "
                    "is provided",
                }
            )
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
