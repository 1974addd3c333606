"""JSON merge patch, JSON patch and strategic merge patch.

JSON patch is RFC 6902 via the ``jsonpatch`` library. Strategic merge patch follows
``k8s.io/apimachinery/pkg/util/strategicpatch`` for the lists controllers actually patch:
lists of objects with a ``patchMergeKey`` merge element by element, ``finalizers`` merge as a set,
every other list is replaced. The directives ``$patch: replace|delete|merge``,
``$deleteFromPrimitiveList/<field>``, ``$retainKeys`` and ``$setElementOrder/<field>`` are honoured.
"""

from __future__ import annotations

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
        patch = jsonpatch.JsonPatch(ops)
        out = patch.apply(target)
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
        return out
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
    return out
