"""Adding and removing a finalizer the way KubeRay does: a typed Update of the whole object.

KubeRay's RayCluster (GCS FT Redis cleanup), RayService and RayJob controllers all add and remove
their finalizers with ``r.Update`` of the object decoded into their Go types, so the spec they send
is the Go round trip of the stored one (:func:`controllers.spechash.go_typed_spec`). When the
stored spec was hand-written, that write changes it and kube-apiserver bumps ``generation`` (1 to
2 right after creation), which every ``observedGeneration`` then reports; KubeRay's own e2e test
``TestRayServiceInitializingTimeoutTerminalFailure`` pins that. Patching only the finalizer would
keep generation 1, so a user switching from KubeRay would see different numbers.

:func:`finalizer_update` builds the body; the caller PUTs it (``client.update``) with the read
``resourceVersion``, so a concurrent change answers 409, as for KubeRay.
"""

from __future__ import annotations

import copy

from controllers.spechash import go_typed_spec
from kuberay_py.objects import Obj

__all__ = ["finalizer_update"]


def finalizer_update(kind: str, obj: Obj, *, add: str | None = None, remove: str | None = None) -> Obj:
    """The PUT body KubeRay sends for ``obj`` with ``add`` appended to / ``remove`` taken from its
    finalizers. Metadata and status go as read (status is ignored on the main resource); the
    spec goes as KubeRay's Go types encode it. ``obj`` is not mutated."""
    body = copy.deepcopy(obj)
    meta = body["metadata"]
    finalizers = [f for f in meta.get("finalizers") or [] if f != remove]
    if add is not None and add not in finalizers:
        finalizers.append(add)
    if finalizers:
        meta["finalizers"] = finalizers
    else:  # Go's omitempty: an emptied list is not sent
        meta.pop("finalizers", None)
    body["spec"] = go_typed_spec(kind, body.get("spec") or {})
    return body
