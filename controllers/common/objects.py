"""Accessors over raw API objects, so ``obj["metadata"].get("labels") or {}`` is written once."""

from __future__ import annotations

from typing import Any

from controllers import constants as C
from kuberay_py.client import Resource
from kuberay_py.objects import Obj

__all__ = [
    "Obj",
    "annotations_of",
    "controller_ref",
    "generation_of",
    "is_deleting",
    "key_of",
    "labels_of",
    "managed_here",
    "new_child",
    "owned_by",
    "spec_of",
]


def key_of(obj: Obj) -> str:
    """``namespace/name``: the key of a namespaced object in the cache, the queue and memories."""
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}"


def spec_of(obj: Obj) -> dict[str, Any]:
    spec: dict[str, Any] = obj.get("spec") or {}
    return spec


def generation_of(obj: Obj) -> int:
    return int((obj.get("metadata") or {}).get("generation") or 0)


def managed_here(obj: Obj) -> bool:
    """Whether KubeRay's controllers own ``obj``: ``spec.managedBy`` unset or naming KubeRay.

    Any other value hands the object to that controller (e.g. MultiKueue), and every controller
    then leaves it alone entirely, status included."""
    return spec_of(obj).get("managedBy") in (None, "", C.MANAGED_BY_KUBERAY)


def labels_of(obj: Obj) -> dict[str, str]:
    labels: dict[str, str] = (obj.get("metadata") or {}).get("labels") or {}
    return labels


def annotations_of(obj: Obj) -> dict[str, str]:
    annotations: dict[str, str] = (obj.get("metadata") or {}).get("annotations") or {}
    return annotations


def is_deleting(obj: Obj) -> bool:
    """The API server has set ``deletionTimestamp``: the object is going, whatever it says."""
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def controller_ref(owner: Obj, kind: str = "RayCluster") -> dict[str, Any]:
    """An ownerReference making ``owner`` the controller, so GC and ``owns()`` watches work.

    ``kind`` (and ``ray.io/v1``) stand in only where ``owner`` does not carry its own."""
    meta = owner["metadata"]
    return {
        "apiVersion": owner.get("apiVersion", "ray.io/v1"),
        "kind": owner.get("kind", kind),
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def new_child(
    res: Resource,
    name: str,
    owner: Obj,
    *,
    labels: dict[str, str],
    annotations: dict[str, str] | None = None,
    owned: bool = True,
    owner_kind: str = "RayCluster",
    **body: Any,
) -> dict[str, Any]:
    """A child object as a controller creates it: in ``owner``'s namespace, with ``labels`` (and
    ``annotations``), controlled by ``owner`` (:func:`controller_ref`) unless ``owned`` is False,
    then ``body`` (``spec=``, ``data=``, ...) in the order given."""
    metadata: dict[str, Any] = {"name": name, "namespace": owner["metadata"]["namespace"], "labels": labels}
    if annotations is not None:
        metadata["annotations"] = annotations
    if owned:
        metadata["ownerReferences"] = [controller_ref(owner, owner_kind)]
    return {"apiVersion": res.api_version, "kind": res.kind, "metadata": metadata, **body}


def owned_by(obj: Obj, owner_uid: str | None) -> bool:
    """Whether ``owner_uid`` is the controlling owner of ``obj`` (``controller: true``)."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    controller = [r for r in refs if r.get("controller")]
    return bool(controller) and controller[0].get("uid") == owner_uid
