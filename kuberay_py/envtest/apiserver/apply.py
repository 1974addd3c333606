"""Server-side apply, as a documented subset.

What is implemented: ``fieldManager`` is required; the applied configuration must name the
object's apiVersion/kind/name; a missing object is created; an existing one is merged with the
applied configuration (strategic merge for built-in kinds, JSON merge for custom resources); the
manager's ``managedFields`` entry (operation ``Apply``, ``fieldsV1`` listing the applied fields)
is recorded. What is not: field-ownership conflicts (``force`` is accepted and ignored) and the
removal of fields a manager stopped applying. docs/envtest.md lists the difference.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from .errors import StatusError
from .meta import clone
from .patch import apply_merge_patch, apply_strategic_merge_patch, merge_key_for

if TYPE_CHECKING:
    from .core import ApiCore, Obj
    from .registry import ResourceType

__all__ = ["fields_v1", "server_side_apply"]


def fields_v1(value: Any, field: str = "", parent: str = "") -> dict[str, Any]:
    """The ``FieldsV1`` set of the fields present in an applied configuration."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if k in ("apiVersion", "kind") and not field:
                continue
            if not field and k == "metadata" and isinstance(v, dict):
                v = {
                    mk: mv
                    for mk, mv in v.items()
                    if mk not in ("name", "namespace", "resourceVersion", "managedFields", "uid")
                }
                if not v:
                    continue
            out[f"f:{k}"] = fields_v1(v, k, field)
        return out
    if isinstance(value, list):
        key = merge_key_for(field, "container" if parent in ("containers", "initContainers") else parent)
        if key and all(isinstance(x, dict) and key in x for x in value):
            return {
                "k:" + orjson.dumps({key: x[key]}).decode(): {".": {}, **fields_v1(x, "", field)}
                for x in value
            }
        if field == "finalizers":
            return {"v:" + orjson.dumps(x).decode(): {} for x in value}
        return {}
    return {}


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
    entry = {
        "manager": field_manager,
        "operation": "Apply",
        "apiVersion": rt.api_version,
        "time": core.now(),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields_v1(patch),
    }
    if subresource:
        entry["subresource"] = subresource
    existing = core.storage.get(rt.key, namespace or "", name)
    if existing is None:
        if subresource:
            raise StatusError.not_found(rt.group, rt.plural, name)
        body = clone(patch)
        body.setdefault("metadata", {})["name"] = name
        body["metadata"]["managedFields"] = [entry]
        return core.create(rt, namespace, body, dry_run=dry_run, strict=strict), True
    base = clone(existing)
    applied = clone(patch)
    applied.get("metadata", {}).pop("managedFields", None)
    merged = (
        apply_strategic_merge_patch(base, applied) if rt.strategic_merge else apply_merge_patch(base, applied)
    )
    managed = [
        m
        for m in (existing["metadata"].get("managedFields") or [])
        if not (
            m.get("manager") == field_manager
            and m.get("operation") == "Apply"
            and m.get("subresource") == entry.get("subresource")
        )
    ]
    merged["metadata"]["managedFields"] = [*managed, entry]
    rv = (patch.get("metadata") or {}).get("resourceVersion")
    if rv and rv != existing["metadata"]["resourceVersion"]:
        raise StatusError.stale(rt.group, rt.plural, name)
    merged["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
    return core.update(
        rt, namespace, name, merged, subresource=subresource, dry_run=dry_run, require_rv=False, strict=strict
    ), False
