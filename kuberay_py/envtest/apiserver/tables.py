"""Server-side ``Table`` output (``Accept: application/json;as=Table;g=meta.k8s.io;v=v1``).

kubectl asks for tables to print ``kubectl get``; with them a CRD's ``additionalPrinterColumns``
show up (``kubectl get rayclusters`` prints desired/available workers and status), Pods show
READY/STATUS/RESTARTS, and ages are formatted by the server as kube-apiserver does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from .meta import Obj
from .registry import ResourceType

__all__ = ["human_duration", "table", "wants_table"]

_TABLE_RE = re.compile(r"as=Table")


def wants_table(accept: str) -> bool:
    return bool(_TABLE_RE.search(accept)) and "g=meta.k8s.io" in accept


def human_duration(seconds: float) -> str:
    """``k8s.io/apimachinery/pkg/util/duration.HumanDuration``."""
    if seconds < -1:
        return "<invalid>"
    s = max(0, int(seconds))
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    if h < 24 * 8:
        return f"{h // 24}d{h % 24}h" if h % 24 else f"{h // 24}d"
    if h < 24 * 365 * 2:
        return f"{h // 24}d"
    if h < 24 * 365 * 8:
        return f"{h // 24 // 365}y{(h // 24) % 365}d"
    return f"{h // 24 // 365}y"


def _age(ts: Any, now: datetime) -> str:
    if not isinstance(ts, str) or not ts:
        return "<unknown>"
    try:
        then = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    return human_duration((now - then).total_seconds())


def json_path(obj: Any, path: str) -> list[Any]:
    """The simple JSONPath subset printer columns use: ``.a.b``, ``.a[0].b``, ``.a[*].b``."""
    current = [obj]
    for part in re.findall(r"\.([^.\[]+)|\[(\*|\d+)\]", path.strip().lstrip("{").rstrip("}")):
        key, index = part
        nxt: list[Any] = []
        for c in current:
            if key and isinstance(c, dict) and key in c:
                nxt.append(c[key])
            elif index == "*" and isinstance(c, list):
                nxt.extend(c)
            elif index and index != "*" and isinstance(c, list) and int(index) < len(c):
                nxt.append(c[int(index)])
        current = nxt
    return current


def _pod_cells(o: Obj, now: datetime) -> list[Any]:
    spec, status = o.get("spec") or {}, o.get("status") or {}
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    phase = status.get("reason") or status.get("phase") or ""
    if o["metadata"].get("deletionTimestamp"):
        phase = "Terminating"
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    return [f"{ready}/{len(spec.get('containers') or [])}", phase, restarts]


def _service_cells(o: Obj, now: datetime) -> list[Any]:
    spec = o.get("spec") or {}
    ports = (
        ",".join(f"{p.get('port')}/{p.get('protocol', 'TCP')}" for p in spec.get("ports") or []) or "<none>"
    )
    ingress = ((o.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    external = ",".join(i.get("ip") or i.get("hostname") or "" for i in ingress) or "<none>"
    return [spec.get("type", ""), spec.get("clusterIP", ""), external, ports]


Column = dict[str, Any]
_BUILTIN: dict[tuple[str, str], tuple[list[Column], Callable[[Obj, datetime], list[Any]]]] = {
    ("", "pods"): (
        [
            {"name": "Ready", "type": "string"},
            {"name": "Status", "type": "string"},
            {"name": "Restarts", "type": "string"},
        ],
        _pod_cells,
    ),
    ("", "namespaces"): (
        [{"name": "Status", "type": "string"}],
        lambda o, now: [(o.get("status") or {}).get("phase", "")],
    ),
    ("", "services"): (
        [
            {"name": "Type", "type": "string"},
            {"name": "Cluster-IP", "type": "string"},
            {"name": "External-IP", "type": "string"},
            {"name": "Port(s)", "type": "string"},
        ],
        _service_cells,
    ),
    ("", "configmaps"): (
        [{"name": "Data", "type": "integer"}],
        lambda o, now: [len(o.get("data") or {}) + len(o.get("binaryData") or {})],
    ),
    ("", "secrets"): (
        [{"name": "Type", "type": "string"}, {"name": "Data", "type": "integer"}],
        lambda o, now: [o.get("type", ""), len(o.get("data") or {})],
    ),
}


def _cell(value: list[Any], col: dict[str, Any], now: datetime) -> Any:
    if not value:
        return None
    if col.get("type") == "date":
        return _age(value[0], now)
    if len(value) > 1:
        return ",".join(str(v) for v in value)
    return value[0]


def table(
    rt: ResourceType,
    objects: list[Obj],
    now: datetime,
    include_object: str,
    list_meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    name_col = {
        "name": "Name",
        "type": "string",
        "format": "name",
        "priority": 0,
        "description": "Name must be unique within a namespace.",
    }
    age_col = {
        "name": "Age",
        "type": "date",
        "format": "",
        "priority": 0,
        "description": "CreationTimestamp is a timestamp representing the server time when this object "
        "was created.",
    }
    printer: list[dict[str, Any]] = list(rt.printer_columns)
    columns: list[Column] = [name_col]
    rows = []
    builtin = _BUILTIN.get(rt.key)
    if printer:
        columns += [
            {
                "name": c["name"],
                "type": c.get("type", "string"),
                "format": c.get("format", ""),
                "description": c.get("description", ""),
                "priority": c.get("priority", 0),
            }
            for c in printer
        ]
    else:
        if builtin is not None:
            columns += [{"format": "", "description": "", "priority": 0, **c} for c in builtin[0]]
        columns.append(age_col)
    for o in objects:
        cells: list[Any] = [o["metadata"]["name"]]
        if printer:
            cells += [_cell(json_path(o, c.get("jsonPath", "")), c, now) for c in printer]
        else:
            if builtin is not None:
                cells += builtin[1](o, now)
            cells.append(_age(o["metadata"].get("creationTimestamp"), now))
        row: dict[str, Any] = {"cells": cells}
        if include_object == "Object":
            row["object"] = o
        elif include_object != "None":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": o["metadata"],
            }
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta or {},
        "columnDefinitions": columns,
        "rows": rows,
    }
