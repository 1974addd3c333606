"""Field sets for server-side apply: which manager owns which fields (``managedFields``).

A field set is a set of paths in ``FieldsV1`` notation -- ``("f:spec", "f:replicas")``, list items
of strategic-merge lists as ``k:{"name":"x"}`` with a ``"."`` marker for the item itself,
``finalizers`` entries as ``v:"x"`` -- convertible to and from the nested ``fieldsV1`` JSON that
kube-apiserver stores. Custom resources' lists are atomic (``x-kubernetes-list-type: map`` is not
interpreted).
"""

from __future__ import annotations

from typing import Any

import orjson

from .patch import merge_key_for

__all__ = [
    "MISSING",
    "Path",
    "delete_path",
    "format_path",
    "from_fields_v1",
    "get_path",
    "leaves",
    "to_fields_v1",
]

Path = tuple[str, ...]
_META_KEYS = ("labels", "annotations", "finalizers", "ownerReferences")
_CONTAINER_LISTS = {"containers", "initContainers", "ephemeralContainers"}


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def _key_for(field: str, context: str, strategic: bool) -> str | None:
    if not strategic:
        return None
    return merge_key_for(field, "container" if context in _CONTAINER_LISTS else context)


def leaves(obj: dict[str, Any], *, strategic: bool, subresource: str | None = None) -> set[Path]:
    """Every owned path of an object (top level: spec/status/data/... and some metadata)."""
    out: set[Path] = set()
    for k, v in obj.items():
        if k in ("apiVersion", "kind"):
            continue
        if (subresource == "status") != (k == "status"):
            continue
        if k == "metadata":
            if isinstance(v, dict):
                for mk in _META_KEYS:
                    if mk in v:
                        _walk(v[mk], ("f:metadata", f"f:{mk}"), mk, "metadata", strategic, out)
            continue
        _walk(v, (f"f:{k}",), k, "", strategic, out)
    return out


def _walk(v: Any, prefix: Path, field: str, context: str, strategic: bool, out: set[Path]) -> None:
    if isinstance(v, dict) and v:
        for k, sub in v.items():
            _walk(sub, (*prefix, f"f:{k}"), k, field, strategic, out)
        return
    if isinstance(v, list) and v:
        if field == "finalizers" and context == "metadata":
            for item in v:
                out.add((*prefix, "v:" + orjson.dumps(item).decode()))
            return
        key = _key_for(field, context, strategic)
        if key and all(isinstance(i, dict) and key in i for i in v):
            for item in v:
                ipath = (*prefix, "k:" + orjson.dumps({key: item[key]}).decode())
                out.add((*ipath, "."))
                for k, sub in item.items():
                    _walk(sub, (*ipath, f"f:{k}"), k, field, strategic, out)
            return
    out.add(prefix)


def _step(cur: Any, part: str) -> Any:
    if part.startswith("f:"):
        return cur.get(part[2:], MISSING) if isinstance(cur, dict) else MISSING
    if part.startswith("k:") and isinstance(cur, list):
        want = orjson.loads(part[2:])
        for item in cur:
            if isinstance(item, dict) and all(item.get(k) == v for k, v in want.items()):
                return item
        return MISSING
    if part.startswith("v:") and isinstance(cur, list):
        value = orjson.loads(part[2:])
        return value if value in cur else MISSING
    return MISSING


def get_path(obj: Any, path: Path) -> Any:
    cur = obj
    for part in path:
        if part == ".":
            return cur
        cur = _step(cur, part)
        if cur is MISSING:
            return MISSING
    return cur


def delete_path(obj: Any, path: Path) -> None:
    """Remove the field (or list item / set member) at ``path`` if present."""
    if path and path[-1] == ".":
        path = path[:-1]
    if not path:
        return
    parent = get_path(obj, path[:-1]) if len(path) > 1 else obj
    last = path[-1]
    if isinstance(parent, dict) and last.startswith("f:"):
        parent.pop(last[2:], None)
    elif isinstance(parent, list) and last.startswith("k:"):
        want = orjson.loads(last[2:])
        parent[:] = [
            i for i in parent if not (isinstance(i, dict) and all(i.get(k) == v for k, v in want.items()))
        ]
    elif isinstance(parent, list) and last.startswith("v:"):
        value = orjson.loads(last[2:])
        parent[:] = [i for i in parent if i != value]


def to_fields_v1(paths: set[Path]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for path in sorted(paths):
        node = root
        for part in path:
            node = node.setdefault(part, {})
    return root


def from_fields_v1(doc: Any, prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    if not isinstance(doc, dict) or not doc:
        if prefix:
            out.add(prefix)
        return out
    for k, sub in doc.items():
        if k == ".":
            out.add((*prefix, "."))
        else:
            out |= from_fields_v1(sub, (*prefix, k))
    return out


def format_path(path: Path) -> str:
    """``.spec.containers[name="c"].image`` -- how apply conflicts name a field."""
    out = ""
    for part in path:
        if part == ".":
            continue
        if part.startswith("f:"):
            out += "." + part[2:]
        elif part.startswith("k:"):
            kv = orjson.loads(part[2:])
            out += "[" + ",".join(f"{k}={orjson.dumps(v).decode()}" for k, v in kv.items()) + "]"
        elif part.startswith("v:"):
            out += "[" + part[2:] + "]"
    return out
