"""Accessors over raw API objects, so ``obj["metadata"].get("labels") or {}`` is written once."""

from __future__ import annotations

from typing import Any

from kuberay_py.objects import Obj

__all__ = ["Obj", "annotations_of", "controller_ref", "is_deleting", "key_of", "labels_of", "owned_by"]


def key_of(obj: Obj) -> str:
    """``namespace/name``: the key of a namespaced object in the cache, the queue and memories."""
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}"


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


def owned_by(obj: Obj, owner_uid: str | None) -> bool:
    """Whether ``owner_uid`` is the controlling owner of ``obj`` (``controller: true``)."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    controller = [r for r in refs if r.get("controller")]
    return bool(controller) and controller[0].get("uid") == owner_uid
