"""JSON merge patch, JSON patch and strategic merge patch.

JSON patch is RFC 6902 via the ``jsonpatch`` library, with one deviation kube-apiserver has too:
it uses ``gopkg.in/evanphx/json-patch.v4``, whose ``replace`` of a missing key in an object adds the
key instead of failing (evanphx/json-patch#204; only v5 follows the RFC). Strategic merge patch follows
``k8s.io/apimachinery/pkg/util/strategicpatch`` for the lists controllers actually patch:
lists of objects with a ``patchMergeKey`` merge element by element, ``finalizers`` merge as a set,
every other list is replaced. The directives ``$patch: replace|delete|merge``,
``$deleteFromPrimitiveList/<field>``, ``$retainKeys`` and ``$setElementOrder/<field>`` are honoured.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jsonpatch

from .errors import StatusError
from .meta import clone

__all__ = ["apply_json_patch", "apply_merge_patch", "apply_strategic_merge_patch", "merge_key_for"]


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return clone(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = apply_merge_patch(result.get(k), v)
    return result


def apply_json_patch(target: dict[str, Any], ops: Any) -> dict[str, Any]:
    if not isinstance(ops, list):
        raise StatusError.bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    if not all(isinstance(op, dict) for op in ops):
        raise StatusError.bad_request("json: cannot unmarshal into Go value of type jsonpatch.Operation")
    try:
        out: Any = clone(target)
        for op in ops:
            out = jsonpatch.JsonPatch([_replace_as_add_when_missing(out, op)]).apply(out, in_place=True)
    except jsonpatch.InvalidJsonPatch as e:
        # evanphx/json-patch decodes any list of objects; a bad operation fails when applied (422)
        raise StatusError.unprocessable(str(e)) from None
    except (
        jsonpatch.JsonPatchException,
        jsonpatch.JsonPointerException,
        KeyError,
        IndexError,
        TypeError,
    ) as e:
        # kube-apiserver answers a patch that cannot be applied with a bare 422.
        raise StatusError.unprocessable(str(e)) from None
    if not isinstance(out, dict):
        raise StatusError.unprocessable("the patch replaced the whole object with a non-object")
    return out


def _replace_as_add_when_missing(doc: Any, op: dict[str, Any]) -> dict[str, Any]:
    """evanphx/json-patch v4 (kube-apiserver's) treats ``replace`` of an absent object key as ``add``."""
    if op.get("op") != "replace" or not isinstance(op.get("path"), str):
        return op
    try:
        parent, key = jsonpatch.JsonPointer(op["path"]).to_last(doc)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, KeyError, IndexError, TypeError):
        return op
    if isinstance(parent, dict) and key not in parent:
        return {**op, "op": "add"}
    return op


# (field name, parent field name or "*") -> merge key.  Taken from the Kubernetes API's
# `patchStrategy:"merge" patchMergeKey:"..."` struct tags.
_MERGE_KEYS: dict[tuple[str, str], str] = {
    ("containers", "*"): "name",
    ("initContainers", "*"): "name",
    ("ephemeralContainers", "*"): "name",
    ("env", "*"): "name",
    ("volumes", "*"): "name",
    ("volumeMounts", "*"): "mountPath",
    ("volumeDevices", "*"): "devicePath",
    ("imagePullSecrets", "*"): "name",
    ("hostAliases", "*"): "ip",
    ("ownerReferences", "*"): "uid",
    ("conditions", "*"): "type",
    ("podIPs", "*"): "ip",
    ("hostIPs", "*"): "ip",
    ("resourceClaims", "*"): "name",
    ("topologySpreadConstraints", "*"): "topologyKey",
    ("schedulingGates", "*"): "name",
    ("resizePolicy", "*"): "resourceName",
    # container ports merge on containerPort, Service ports on port
    ("ports", "container"): "containerPort",
    ("ports", "spec"): "port",
}
# Lists of scalars with patchStrategy "merge" (merged as sets).
_MERGE_SETS = {"finalizers"}


def merge_key_for(field: str, parent: str) -> str | None:
    key = _MERGE_KEYS.get((field, parent))
    if key is None:
        key = _MERGE_KEYS.get((field, "*"))
    return key


def apply_strategic_merge_patch(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(patch, dict):
        raise StatusError.bad_request(
            "json: cannot unmarshal array into Go value of type map[string]interface {}"
        )
    result = _merge_map(target, patch, "")
    if not isinstance(result, dict):
        raise StatusError.unprocessable("the patch deleted the whole object")
    return result


_CONTAINER_LISTS = {"containers", "initContainers", "ephemeralContainers"}


def _merge_map(target: Any, patch: dict[str, Any], context: str) -> Any:
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    if directive == "replace":
        return {k: clone(v) for k, v in patch.items() if k != "$patch"}
    if directive not in (None, "merge"):
        raise StatusError.bad_request(f"Unknown patch type: {directive} in map: {patch}")
    result = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    for k, v in patch.items():
        if k in ("$patch", "$retainKeys") or k.startswith("$setElementOrder/"):
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            name = k.split("/", 1)[1]
            if isinstance(result.get(name), list) and isinstance(v, list):
                result[name] = [x for x in result[name] if x not in v]
            continue
        if v is None:
            result.pop(k, None)
            continue
        cur = result.get(k)
        if isinstance(v, dict):
            merged = _merge_map(cur, v, k)
            if merged is None:
                result.pop(k, None)
            else:
                result[k] = merged
        elif isinstance(v, list):
            result[k] = _merge_list(cur, v, k, context)
        else:
            result[k] = clone(v)
    if isinstance(retain, list):
        keep = set(retain)
        result = {k: v for k, v in result.items() if k in keep}
    return result


def _merge_list(cur: Any, patch: list[Any], field: str, context: str) -> list[Any]:
    parent = "container" if context in _CONTAINER_LISTS else context
    key = merge_key_for(field, parent)
    current = list(cur) if isinstance(cur, list) else []
    if field in _MERGE_SETS:
        out = list(current)
        for item in patch:
            if item not in out:
                out.append(clone(item))
        return _kube_order(out, patch, current, lambda x: x)
    if key is None or not all(isinstance(x, dict) for x in patch):
        # A `$patch: replace` marker in a list means "replace"; plain lists are atomic anyway.
        return [clone(x) for x in patch if not (isinstance(x, dict) and x.get("$patch") == "replace")]
    if any(isinstance(x, dict) and x.get("$patch") == "replace" for x in patch):
        return [clone(x) for x in patch if x.get("$patch") != "replace"]
    out = [x for x in current]
    for item in patch:
        if key not in item:
            raise StatusError.bad_request(f"map: {item} does not contain declared merge key: {key}")
        idx = next((i for i, x in enumerate(out) if isinstance(x, dict) and x.get(key) == item[key]), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
            continue
        if idx is None:
            out.append(_merge_map({}, item, field))
        else:
            out[idx] = _merge_map(out[idx], item, field)
    kept = [x for x in patch if x.get("$patch") != "delete"]
    server = [x for x in current if isinstance(x, dict)]
    return _kube_order(out, kept, server, lambda x: x.get(key) if isinstance(x, dict) else x)


def _kube_order(
    merged: list[Any], patch: list[Any], server: list[Any], ident: Callable[[Any], Any]
) -> list[Any]:
    """Order a merged list as strategicpatch's ``normalizeElementOrder`` does.

    Patched items keep the patch's order, server-only items the live order; the two are interleaved
    by their live positions, and a patched item the live list did not have goes *before* the
    server-only item it meets (``mergeSortedSlice``): merging ``[b]`` into ``[a]`` gives ``[b, a]``.
    """
    patch_ids = [ident(x) for x in patch]
    server_ids = [ident(x) for x in server]

    def at(ids: list[Any], item: Any) -> int:
        return ids.index(ident(item)) if ident(item) in ids else -1

    patched = sorted((x for x in merged if ident(x) in patch_ids), key=lambda x: at(patch_ids, x))
    server_only = sorted((x for x in merged if ident(x) not in patch_ids), key=lambda x: at(server_ids, x))
    out: list[Any] = []
    i = j = 0
    while i < len(server_only) or j < len(patched):
        if j >= len(patched):
            out.append(server_only[i])
            i += 1
        elif i >= len(server_only):
            out.append(patched[j])
            j += 1
        else:
            li, ri = at(server_ids, server_only[i]), at(server_ids, patched[j])
            if li >= 0 and ri >= 0 and li < ri:
                out.append(server_only[i])
                i += 1
            else:
                out.append(patched[j])
                j += 1
    return out
