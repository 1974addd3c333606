"""``managedFields`` bookkeeping for ordinary writes, below the core (which records every write).

Once an object has been server-side applied, a PUT/PATCH writer owns the fields it changed and
takes them away from other managers, as kube-apiserver's field manager does. Server-side apply
itself (``apply.py``) sits above the core and uses the same entries.
"""

from __future__ import annotations

from typing import Any

from .fieldsets import MISSING, Path, from_fields_v1, get_path, leaves, to_fields_v1
from .meta import Obj, clone
from .registry import ResourceType

__all__ = ["managed_entry", "same_manager", "track_update"]


def managed_entry(
    manager: str, operation: str, rt: ResourceType, paths: set[Path], now: str, subresource: str | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "manager": manager,
        "operation": operation,
        "apiVersion": rt.api_version,
        "time": now,
        "fieldsType": "FieldsV1",
        "fieldsV1": to_fields_v1(paths),
    }
    if subresource:
        entry["subresource"] = subresource
    return entry


def same_manager(entry: dict[str, Any], manager: str, operation: str, subresource: str | None) -> bool:
    return (
        entry.get("manager") == manager
        and entry.get("operation") == operation
        and entry.get("subresource") == subresource
    )


def track_update(
    rt: ResourceType, old: Obj, new: Obj, manager: str, subresource: str | None, now: str
) -> None:
    """After a PUT/PATCH of a server-side-applied object: the writer owns what it changed."""
    managed = old["metadata"].get("managedFields") or []
    if not any(m.get("operation") == "Apply" for m in managed):
        return
    if "managedFields" not in new["metadata"] or new["metadata"]["managedFields"] is None:
        new["metadata"]["managedFields"] = clone(managed)
    strategic = rt.strategic_merge
    candidates = leaves(old, strategic=strategic, subresource=subresource) | leaves(
        new, strategic=strategic, subresource=subresource
    )
    changed = {p for p in candidates if p[-1] != "." and get_path(old, p) != get_path(new, p)}
    if not changed:
        return
    present = {p for p in changed if get_path(new, p) is not MISSING}
    entries: list[dict[str, Any]] = []
    mine: set[Path] = set(present)
    for m in new["metadata"]["managedFields"]:
        paths = from_fields_v1(m.get("fieldsV1"))
        if same_manager(m, manager, "Update", subresource):
            mine |= paths - (changed - present)
            continue
        kept = paths - changed
        if kept:
            entries.append({**m, "fieldsV1": to_fields_v1(kept)})
    if mine:
        entries.append(managed_entry(manager, "Update", rt, mine, now, subresource))
    new["metadata"]["managedFields"] = entries
