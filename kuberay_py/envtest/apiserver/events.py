"""Event validation as kube-apiserver applies it (``pkg/apis/core/validation/events.go``).

Event recorders are easy to get subtly wrong (a missing ``reportingInstance``, a ``source`` on an
events.k8s.io/v1 Event); a real server rejects those with a 422, so the built-in one does too.
Errors name the internal field paths kube-apiserver reports (``involvedObject``, ``message``).
An update through events.k8s.io/v1 may change little more than ``series`` and metadata (the
recorder's repeat counter): ``note``, ``regarding``, ``reason`` and the other descriptive fields
are immutable there (422 "field is immutable", named by their internal paths such as
``message``); core/v1 writes keep the legacy rules and may change them.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from .core import ApiCore, Obj
from .errors import Cause, field_cause
from .eventconversion import events_v1_to_core
from .meta import go_time_string, parse_time
from .registry import ResourceType
from .validation import invalid, name_problems, required

__all__ = ["EventHooks"]

_LIMIT = 128
_NOTE_LIMIT = 1024
_QUALIFIED = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)


def _internal(obj: Obj, new_api: bool) -> dict[str, Any]:
    """The fields of the internal Event type, whichever API version the object came through."""
    if new_api:
        return {
            "namespace": obj["metadata"].get("namespace", ""),
            "involvedObject": obj.get("regarding") or {},
            "message": obj.get("note") or "",
            "source": obj.get("deprecatedSource") or {},
            "firstTimestamp": obj.get("deprecatedFirstTimestamp"),
            "lastTimestamp": obj.get("deprecatedLastTimestamp"),
            "count": obj.get("deprecatedCount") or 0,
            "reportingController": obj.get("reportingController") or "",
            "reportingInstance": obj.get("reportingInstance") or "",
            "action": obj.get("action") or "",
            "reason": obj.get("reason") or "",
            "type": obj.get("type") or "",
            "eventTime": obj.get("eventTime"),
            "series": obj.get("series"),
        }
    return {
        "namespace": obj["metadata"].get("namespace", ""),
        "involvedObject": obj.get("involvedObject") or {},
        "message": obj.get("message") or "",
        "reportingController": obj.get("reportingComponent") or "",
        "reportingInstance": obj.get("reportingInstance") or "",
        "action": obj.get("action") or "",
        "reason": obj.get("reason") or "",
        "eventTime": obj.get("eventTime"),
    }


def _legacy(ev: dict[str, Any], controller_field: str) -> list[Cause]:
    causes: list[Cause] = []
    ns = ev["namespace"]
    involved_ns = (ev["involvedObject"] or {}).get("namespace") or ""
    if not ev.get("eventTime"):
        if not involved_ns:
            if ns not in ("", "default"):
                causes.append(
                    invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")
                )
        elif ns != involved_ns:
            causes.append(invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
    else:
        if not involved_ns and ns not in ("default", "kube-system"):
            causes.append(invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
        controller = ev["reportingController"]
        if not controller:
            causes.append(required(controller_field))
        elif not _QUALIFIED.match(controller):
            causes.append(
                invalid(
                    controller_field,
                    controller,
                    "name part must consist of alphanumeric "
                    "characters, '-', '_' or '.', and must start and end with an alphanumeric "
                    "character",
                )
            )
        for fld in ("reportingInstance", "action", "reason"):
            if not ev[fld]:
                causes.append(required(fld))
            elif len(ev[fld]) > _LIMIT:
                causes.append(invalid(fld, "", f"can have at most {_LIMIT} characters"))
        if len(ev["message"]) > _NOTE_LIMIT:
            causes.append(invalid("message", "", f"can have at most {_NOTE_LIMIT} characters"))
    causes.extend(invalid("namespace", ns, m) for m in name_problems(ns, "subdomain") if ns)
    return causes


def _strict(ev: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    series = ev.get("series")
    if isinstance(series, dict):
        if int(series.get("count") or 0) < 2:
            causes.append(invalid("series.count", "", "should be at least 2"))
        if not series.get("lastObservedTime"):
            causes.append(required("series.lastObservedTime"))
    if not ev.get("eventTime"):
        causes.append(required("eventTime"))
    if ev["type"] not in ("Normal", "Warning"):
        causes.append(invalid("type", "", f"has invalid value: {ev['type']}"))
    for fld in ("firstTimestamp", "lastTimestamp"):
        if ev.get(fld):
            causes.append(invalid(fld, "", "needs to be unset"))
    if ev.get("count"):
        causes.append(invalid("count", "", "needs to be unset"))
    if (ev.get("source") or {}).get("component") or (ev.get("source") or {}).get("host"):
        causes.append(invalid("source", "", "needs to be unset"))
    return causes


# ValidateEventUpdate's immutable fields, by internal name and in its order ("reason" is listed
# twice there, so its cause comes twice; the message shows it once, as ToAggregate dedups).
_IMMUTABLE = (
    "involvedObject",
    "reason",
    "message",
    "source",
    "firstTimestamp",
    "lastTimestamp",
    "count",
    "reason",
    "type",
    "eventTime",
    "action",
    "related",
    "reportingController",
    "reportingInstance",
)
# ObjectReference's JSON names and Go field names, in the struct's order (for ``%#v``).
_REF_FIELDS = (
    ("kind", "Kind"),
    ("namespace", "Namespace"),
    ("name", "Name"),
    ("uid", "UID"),
    ("apiVersion", "APIVersion"),
    ("resourceVersion", "ResourceVersion"),
    ("fieldPath", "FieldPath"),
)


def _as_core_fields(obj: Obj, new_api: bool) -> dict[str, Any]:
    """The update-checked fields under their internal names, whichever API the object came in."""
    core = events_v1_to_core(obj) if new_api else obj
    return {
        name: core.get("reportingComponent" if name == "reportingController" else name)
        for name in dict.fromkeys(_IMMUTABLE)
    }


def _comparable(name: str, value: Any) -> Any:
    """What ``Semantic.DeepEqual`` compares: unset and zero values are the same."""
    if name in ("involvedObject", "related", "source"):
        if value is None and name == "related":
            return None  # a nil pointer differs from an empty reference
        return {k: v for k, v in (value or {}).items() if v not in ("", None)}
    if name in ("firstTimestamp", "lastTimestamp", "eventTime"):
        return parse_time(value)
    if name == "count":
        return int(value or 0)
    return str(value or "")


def _go_value(name: str, value: Any) -> str:
    """The new value as field.Error prints it: strings quoted, structs as Go's ``%#v``."""
    if name in ("involvedObject", "related"):
        if value is None and name == "related":
            return "null"
        ref = value or {}
        inner = ", ".join(f"{go}:{_quoted(ref.get(js))}" for js, go in _REF_FIELDS)
        return "core.ObjectReference{" + inner + "}"
    if name == "source":
        src = value or {}
        component, host = _quoted(src.get("component")), _quoted(src.get("host"))
        return f"core.EventSource{{Component:{component}, Host:{host}}}"
    if name in ("firstTimestamp", "lastTimestamp", "eventTime"):
        return go_time_string(value)
    if name == "count":
        return str(int(value or 0))
    return _quoted(value)


def _quoted(value: Any) -> str:
    return orjson.dumps(str(value or "")).decode()


def _update_through_new_api(old: Obj, new: Obj) -> list[Cause]:
    """``ValidateEventUpdate`` for events.k8s.io/v1 writes: most fields are fixed after the create."""
    causes = []
    before, after = _as_core_fields(old, False), _as_core_fields(new, True)
    if (old.get("series") or None) != (new.get("series") or None):
        causes += [c for c in _strict(_internal(new, True)) if c["field"].startswith("series")]
    for name in _IMMUTABLE:
        if _comparable(name, before[name]) != _comparable(name, after[name]):
            causes.append(
                field_cause(
                    "FieldValueInvalid",
                    name,
                    f"Invalid value: {_go_value(name, after[name])}: field is immutable",
                )
            )
    return causes


def _store_as_core(obj: Obj) -> None:
    """Rewrite an events.k8s.io/v1 Event in place into the core/v1 shape both APIs store."""
    converted = events_v1_to_core(obj)
    obj.clear()
    obj.update(converted)


class EventHooks:
    """Validation per API version, then one stored shape (core/v1) for both Event APIs."""

    def prepare_create(self, core: ApiCore, rt: ResourceType, obj: Obj) -> list[Cause]:
        new_api = rt.group == "events.k8s.io"
        ev = _internal(obj, new_api)
        causes = _legacy(ev, "reportingController" if new_api else "reportingComponent")
        if new_api:
            causes += _strict(ev)
            if not causes:
                _store_as_core(obj)
        return causes

    def prepare_update(
        self, core: ApiCore, rt: ResourceType, old: Obj, new: Obj, subresource: str | None
    ) -> list[Cause]:
        new_api = rt.group == "events.k8s.io"
        causes = _legacy(_internal(new, new_api), "reportingController" if new_api else "reportingComponent")
        if new_api:
            causes += _update_through_new_api(old, new)
            if not causes:
                _store_as_core(new)
        return causes

    def after_write(self, core: ApiCore, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        return None

    def after_delete(self, core: ApiCore, rt: ResourceType, obj: Obj) -> None:
        return None
