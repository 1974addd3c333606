"""Cache transforms: shrink each object before the informer stores it and handlers see it.

controller-runtime's ``cache.Options.DefaultTransform`` / ``ByObject[...].Transform`` (client-go's
``TransformFunc``): an operator that caches thousands of Pods but reads a dozen fields of each
pays for the whole object, several times its JSON size as Python dicts, unless it drops what it
never reads on the way in. The default, :func:`strip_managed_fields`, is controller-runtime's
``TransformStripManagedFields``; a per-resource transform *replaces* the default (as ``ByObject``
does), so it should drop ``managedFields`` itself.

**Cached objects are then partial.** Never send a transformed object back with ``update`` (PUT):
the API server would take every dropped field as a request to clear it. Patch the fields you
change instead, or ``get`` the full object from the API first. Code that starts reading a new
field from cached objects must also keep that field in the transform.

A transform gets the freshly decoded object (nobody else holds it) and may modify it in place or
return a new dict. It must keep ``metadata.name``, ``namespace`` and ``resourceVersion``: the
store is keyed by the first two and the relist diff compares the third. A transform that raises,
returns something other than a dict or changes those three fields is a bug, but not a reason to
lose the event: the failure is logged and the object is stored with only ``managedFields``
stripped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kuberay_py.log import get_logger
from kuberay_py.objects import Obj

__all__ = ["Transform", "safe_transform", "strip_managed_fields"]

log = get_logger("kuberay_py.cache.transform")

Transform = Callable[[Obj], Obj]


def strip_managed_fields(obj: Obj) -> Obj:
    """Drop ``metadata.managedFields`` (often half the object and never read by a controller)."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
    return obj


def safe_transform(transform: Transform | None, resource: str) -> Transform:
    """``transform`` wrapped so that a failure or a non-dict result keeps the (stripped) object."""
    if transform is None:
        return _identity
    if transform is strip_managed_fields:
        return transform

    def apply(obj: Obj) -> Obj:
        identity = _identity_of(obj)  # read first: the transform may modify ``obj`` in place
        try:
            out: Any = transform(obj)
        except Exception:
            log.exception("cache_transform_failed", resource=resource, key=_key(obj))
            return strip_managed_fields(obj)
        if not isinstance(out, dict):
            log.error(
                "cache_transform_returned_non_dict",
                resource=resource,
                key=_key(obj),
                returned=type(out).__name__,
            )
            return strip_managed_fields(obj)
        if _identity_of(out) != identity:
            # A lost name, namespace or resourceVersion would corrupt the store's keys or the
            # relist diff; the original object is still whole unless the transform mutated it.
            log.error(
                "cache_transform_changed_identity",
                resource=resource,
                key=_key(obj),
                hint="a transform must keep metadata.name, namespace and resourceVersion",
            )
            return strip_managed_fields(obj)
        return out

    return apply


def _identity_of(obj: Obj) -> tuple[Any, Any, Any]:
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return (None, None, None)
    return (metadata.get("name"), metadata.get("namespace"), metadata.get("resourceVersion"))


def _identity(obj: Obj) -> Obj:
    return obj


def _key(obj: Obj) -> str:
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(metadata, dict):
        return "?"
    return f"{metadata.get('namespace') or ''}/{metadata.get('name') or ''}"
