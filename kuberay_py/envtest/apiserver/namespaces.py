"""The namespace controller's deletion half, so deleting a test namespace actually finishes.

Real envtest has no kube-controller-manager, so a deleted namespace stays ``Terminating``
forever; the built-in server can mimic that (``namespace_controller=False``) but by default does
what a cluster does: delete everything in the namespace, wait for finalizers, then drop the
``kubernetes`` finalizer and the namespace itself.
"""

from __future__ import annotations

import asyncio

from .core import ApiCore, Obj
from .deletion import DeleteOptions, delete_collection, delete_object
from .errors import StatusError
from .meta import clone
from .registry import ResourceType

__all__ = ["finalize_namespace"]

NS_KEY = ("", "namespaces")


def finalize_namespace(core: ApiCore, name: str) -> None:
    ns = core.storage.get(NS_KEY, "", name)
    if ns is None or not ns["metadata"].get("deletionTimestamp"):
        return
    seen: set[tuple[str, str]] = set()
    remaining = False
    for rt in core.registry.all_types():
        if not rt.namespaced or rt.key in seen:
            continue
        seen.add(rt.key)
        delete_collection(
            core,
            rt,
            name,
            lambda _o: True,
            DeleteOptions(None, {"gracePeriodSeconds": "0", "propagationPolicy": "Background"}),
        )
        bucket = core.storage.buckets.get(rt.key)
        if bucket is not None and any(k[0] == name for k in bucket.objects):
            remaining = True
    if remaining:

        def retry(deleted_rt: ResourceType, obj: Obj) -> None:
            if obj["metadata"].get("namespace") == name:
                core.deletion_listeners.remove(retry)
                asyncio.get_running_loop().call_soon(finalize_namespace, core, name)

        core.deletion_listeners.append(retry)
        return
    ns_rt = core.registry.get("", "v1", "namespaces")
    assert ns_rt is not None
    ns = core.storage.get(NS_KEY, "", name)
    if ns is None:
        return
    new = clone(ns)
    new["spec"]["finalizers"] = [
        f for f in (new.get("spec") or {}).get("finalizers") or [] if f != "kubernetes"
    ]
    try:
        core.update(ns_rt, None, name, new, subresource="finalize")
        if core.storage.get(NS_KEY, "", name) is not None:
            delete_object(core, ns_rt, None, name, DeleteOptions(None, {}))
    except StatusError:
        return
