"""What the operator keeps of a Pod in its cache: only the fields its controllers read.

The cache holds every Ray Pod, and a decoded Pod (env, volumes, probes, init containers, the full
container statuses) is ~15 KiB of Python objects; the RayCluster and RayService controllers, the
expectations and the head-proxy checker read a few dozen fields of it. :func:`slim_pod` is the
cache transform (controller-runtime's ``ByObject[&corev1.Pod{}].Transform``) that keeps those
fields and drops the rest, and interns the strings repeated across Pods (namespace, label keys and
values, owner references, container and port names, phases, condition types) so thousands of Pods
share one copy of each.

What is kept is :class:`controllers.common.pods.SlimPod` (its fields say who reads them): the
tuples below are derived from those TypedDicts, so a controller that starts reading a new Pod
field adds it to the shape and this transform keeps it.

Cached Pods are therefore partial: the controllers only ever patch, delete or
delete-collection Pods, never ``update`` one (that would clear every dropped field).
"""

from __future__ import annotations

import sys
from typing import Any

from controllers.common.pods import ContainerStatus, PodMetadata, PodSpec, PodStatus
from kuberay_py.objects import Obj

__all__ = ["AUTH_ENV_PREFIX", "slim_pod"]

# The env of the Ray container that RayService's dashboard client reads (RAY_AUTH_MODE,
# RAY_AUTH_TOKEN); nothing else in a cached Pod's env is read.
AUTH_ENV_PREFIX = "RAY_AUTH_"

# Unique per Pod, so not interned (interning would only add an entry to the interned table).
_METADATA_UNIQUE = ("name", "uid", "resourceVersion", "creationTimestamp", "deletionTimestamp")
# Mappings and lists, interned as a whole when present and non-empty.
_METADATA_NESTED = ("labels", "annotations", "ownerReferences")
_METADATA_SHARED = tuple(
    k for k in PodMetadata.__annotations__ if k not in _METADATA_UNIQUE and k not in _METADATA_NESTED
)
_SPEC_KEPT = tuple(k for k in PodSpec.__annotations__ if k != "containers")
_STATUS_KEPT = tuple(k for k in PodStatus.__annotations__ if k not in ("conditions", "containerStatuses"))
_CONTAINER_STATUS_KEPT = tuple(ContainerStatus.__annotations__)
# Strings longer than this (e.g. a last-applied-configuration annotation) are not worth interning.
_INTERN_MAX = 128
_intern_str = sys.intern


def _intern(value: Any) -> Any:
    """``value`` with its string values interned: equal strings across Pods become one object.

    Keys are left alone: orjson already decodes equal map keys (up to 64 bytes) to one cached
    object. Runs on every Pod watch event, so short string values are interned inline instead of
    by a recursive call each; decoded JSON holds only exact ``str``/``dict``/``list`` types, so
    ``type() is`` is exact.
    """
    kind = type(value)
    if kind is str:
        return _intern_str(value) if len(value) <= _INTERN_MAX else value
    if kind is dict:
        return {
            k: (_intern_str(v) if len(v) <= _INTERN_MAX else v) if type(v) is str else _intern(v)
            for k, v in value.items()
        }
    if kind is list:
        return [_intern(v) for v in value]
    return value


def _slim_container(container: Any) -> Any:
    if not isinstance(container, dict):
        return container
    out: Obj = {}
    if "name" in container:
        out["name"] = _intern(container["name"])
    if container.get("ports"):
        out["ports"] = _intern(container["ports"])
    env = [
        e
        for e in container.get("env") or ()
        if type(e) is dict and type(n := e.get("name")) is str and n.startswith(AUTH_ENV_PREFIX)
    ]
    if env:
        out["env"] = _intern(env)
    return out


def _slim_container_status(cs: Any) -> Any:
    if not isinstance(cs, dict):
        return cs
    return {k: _intern(cs[k]) for k in _CONTAINER_STATUS_KEPT if k in cs}


def _condition_kept(cond: Any) -> bool:
    """``Ready`` (the only condition read) and any condition that is not ``True`` (diagnostics)."""
    if not isinstance(cond, dict):
        return True
    return cond.get("type") == "Ready" or cond.get("status") != "True"


def slim_pod(pod: Obj) -> Obj:
    """The cache transform for Pods: a new dict with only the fields the operator reads."""
    out: Obj = {}
    for key in ("apiVersion", "kind"):
        if key in pod:
            out[key] = _intern(pod[key])
    metadata = pod.get("metadata")
    if isinstance(metadata, dict):
        meta: Obj = {k: metadata[k] for k in _METADATA_UNIQUE if k in metadata}
        meta.update((k, _intern(metadata[k])) for k in _METADATA_SHARED if k in metadata)
        for key in _METADATA_NESTED:
            if metadata.get(key):
                meta[key] = _intern(metadata[key])
        out["metadata"] = meta
    spec = pod.get("spec")
    if isinstance(spec, dict):
        slim_spec: Obj = {k: _intern(spec[k]) for k in _SPEC_KEPT if k in spec}
        if isinstance(spec.get("containers"), list):
            slim_spec["containers"] = [_slim_container(c) for c in spec["containers"]]
        out["spec"] = slim_spec
    status = pod.get("status")
    if isinstance(status, dict):
        slim_status: Obj = {k: _intern(status[k]) for k in _STATUS_KEPT if k in status}
        conditions = status.get("conditions")
        if isinstance(conditions, list):
            slim_status["conditions"] = [_intern(c) for c in conditions if _condition_kept(c)]
        statuses = status.get("containerStatuses")
        if isinstance(statuses, list):
            slim_status["containerStatuses"] = [_slim_container_status(c) for c in statuses]
        out["status"] = slim_status
    return out
