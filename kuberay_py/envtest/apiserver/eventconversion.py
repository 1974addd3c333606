"""One storage for both Event APIs, as kube-apiserver has it.

kube-apiserver keeps a single Event resource (stored as core/v1) and serves it through
``/api/v1`` and ``/apis/events.k8s.io/v1``, converting field by field
(``pkg/apis/events/v1/conversion.go``): ``regarding`` is ``involvedObject``, ``note`` is
``message``, ``deprecatedSource``/``deprecatedFirstTimestamp``/``deprecatedLastTimestamp``/
``deprecatedCount`` are ``source``/``firstTimestamp``/``lastTimestamp``/``count``, and
``reportingController`` is core's ``reportingComponent``; ``reason``, ``type``, ``action``,
``related``, ``reportingInstance``, ``eventTime`` and ``series`` keep their names. So an operator
that records through events.k8s.io/v1 shows up in ``kubectl describe`` (which reads core/v1).
"""

from __future__ import annotations

from .core import Obj

__all__ = ["CORE_EVENTS", "EVENTS_V1", "core_to_events_v1", "events_v1_to_core"]

CORE_EVENTS = "v1"
EVENTS_V1 = "events.k8s.io/v1"

# events.k8s.io/v1 name -> core/v1 name, for the fields whose names differ.
_RENAMED = {
    "regarding": "involvedObject",
    "note": "message",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
    "reportingController": "reportingComponent",
}
_BACK = {core: new for new, core in _RENAMED.items()}


def _rename(obj: Obj, names: dict[str, str], api_version: str) -> Obj:
    out: Obj = {}
    for key, value in obj.items():
        out[names.get(key, key)] = value
    out["apiVersion"] = api_version
    out["kind"] = "Event"
    return out


def events_v1_to_core(obj: Obj) -> Obj:
    """An events.k8s.io/v1 Event as core/v1 stores it (the metadata dict is shared, not copied)."""
    return _rename(obj, _RENAMED, CORE_EVENTS)


def core_to_events_v1(obj: Obj) -> Obj:
    """A stored core/v1 Event as events.k8s.io/v1 shows it."""
    return _rename(obj, _BACK, EVENTS_V1)
