"""Server-side apply with field ownership (``managedFields``), as a documented subset.

Implemented: ``fieldManager`` is required; a missing object is created; the applied configuration
is merged into the live object (strategic merge for built-in kinds, JSON merge for custom
resources); a field another manager owns with a different value is a 409 ``Conflict`` unless
``force=true`` (which takes the field over); fields the manager applied before and no longer
applies are removed unless another manager owns them; ``managedFields`` holds one ``Apply`` entry
per manager. Once an object has an ``Apply`` entry, ordinary writes (PUT/PATCH) record ``Update``
entries for the fields they change and take those fields away from other managers, so conflicts
and removals follow the same ownership rules as kube-apiserver. Not implemented: managedFields on
objects never server-side applied, ``x-kubernetes-list-type: map`` lists of custom resources
(treated as atomic), and the other-manager-specific merge of sets.
"""

from __future__ import annotations

from typing import Any

from .core import ApiCore
from .errors import StatusError
from .fieldsets import MISSING, Path, delete_path, format_path, from_fields_v1, get_path, leaves, to_fields_v1
from .managedfields import managed_entry, same_manager
from .meta import Obj, clone
from .patch import apply_merge_patch, apply_strategic_merge_patch
from .registry import ResourceType

__all__ = ["server_side_apply"]


def server_side_apply(
    core: ApiCore,
    rt: ResourceType,
    namespace: str | None,
    name: str,
    patch: Any,
    *,
    subresource: str | None,
    dry_run: bool,
    field_manager: str | None,
    force: bool,
    strict: bool = False,
) -> tuple[Obj, bool]:
    if not field_manager:
        raise StatusError.invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            [
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value: is required for apply patch",
                    "field": "fieldManager",
                }
            ],
        )
    if not isinstance(patch, dict):
        raise StatusError.bad_request("error decoding YAML: the applied configuration must be an object")
    if patch.get("apiVersion") is None or patch.get("kind") is None:
        raise StatusError.bad_request("invalid object type: /, Kind=")
    meta = patch.get("metadata") or {}
    if meta.get("name") and meta["name"] != name:
        raise StatusError.bad_request(
            f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
        )
    applied = clone(patch)
    applied.setdefault("metadata", {}).pop("managedFields", None)
    applied_set = leaves(applied, strategic=rt.strategic_merge, subresource=subresource)
    entry = managed_entry(field_manager, "Apply", rt, applied_set, core.now(), subresource)
    existing = core.storage.get(rt.key, namespace or "", name)
    if existing is None:
        if subresource:
            raise StatusError.not_found(rt.group, rt.plural, name)
        applied["metadata"]["name"] = name
        applied["metadata"]["managedFields"] = [entry]
        return core.create(rt, namespace, applied, dry_run=dry_run, strict=strict), True
    rv = meta.get("resourceVersion")
    if rv and rv != existing["metadata"]["resourceVersion"]:
        raise StatusError.stale(rt.group, rt.plural, name)

    managed = list(existing["metadata"].get("managedFields") or [])
    previous: set[Path] = set()
    others: list[tuple[dict[str, Any], set[Path]]] = []
    for m in managed:
        paths = from_fields_v1(m.get("fieldsV1"))
        if same_manager(m, field_manager, "Apply", subresource):
            previous = paths
        else:
            others.append((m, paths))
    conflicts: list[tuple[dict[str, Any], Path]] = []
    for m, paths in others:
        for p in sorted(applied_set & paths):
            if p[-1] != "." and get_path(existing, p) != get_path(applied, p):
                conflicts.append((m, p))
    if conflicts and not force:
        raise _conflict_error(rt, name, conflicts)

    merged = (
        apply_strategic_merge_patch(clone(existing), applied)
        if rt.strategic_merge
        else apply_merge_patch(clone(existing), applied)
    )
    taken = {p for _m, p in conflicts}
    new_managed: list[dict[str, Any]] = []
    still_owned: set[Path] = set()
    for m, paths in others:
        kept = paths - taken
        still_owned |= kept
        if kept:
            new_managed.append({**m, "fieldsV1": to_fields_v1(kept)})
    # outermost first (a list item before its fields), so removing an item is one step
    for p in sorted(previous - applied_set, key=lambda q: (len(q) - (q[-1] == "."), q[-1] != ".")):
        if p[-1] == ".":
            item = p[:-1]
            # a list item stays while another manager owns any field inside it
            if any(q[: len(item)] == item for q in still_owned | applied_set):
                continue
        elif p in still_owned:
            continue
        if get_path(merged, p) is not MISSING:
            delete_path(merged, p)
    new_managed.append(entry)
    merged["metadata"]["managedFields"] = new_managed
    merged["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
    return core.update(
        rt,
        namespace,
        name,
        merged,
        subresource=subresource,
        dry_run=dry_run,
        require_rv=False,
        strict=strict,
        manager=None,
    ), False


def _conflict_error(rt: ResourceType, name: str, conflicts: list[tuple[dict[str, Any], Path]]) -> StatusError:
    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f'conflict with "{m.get("manager")}"'
            + (f" using {m.get('apiVersion')}" if m.get("apiVersion") else ""),
            "field": format_path(p),
        }
        for m, p in conflicts
    ]
    if len(conflicts) == 1:
        _m, p = conflicts[0]
        summary = f"Apply failed with 1 conflict: {causes[0]['message']}: {format_path(p)}"
    else:
        lines = "\n".join(f"- {c['message']}: {c['field']}" for c in causes)
        summary = f"Apply failed with {len(conflicts)} conflicts: {lines}"
    details: dict[str, Any] = {"name": name, "kind": rt.plural, "causes": causes}
    if rt.group:
        details["group"] = rt.group
    return StatusError(409, "Conflict", summary, details)
