"""DELETE and DELETE-collection: finalizers, graceful Pod deletion, propagation policies.

Follows ``k8s.io/apiserver/pkg/registry/rest/delete.go`` (``BeforeDelete``) and the generic
store: an object with finalizers -- or a Pod bound to a node with a grace period -- is only
marked (``deletionTimestamp``, generation bumped); it disappears once the finalizers are gone and
the grace period is zero. ``Foreground`` and ``Orphan`` add the ``foregroundDeletion`` / ``orphan``
finalizers, which only a garbage collector removes (none runs here, as in envtest; the cluster
simulator provides one).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from .core import ApiCore, Obj
from .errors import StatusError
from .meta import clone, format_time
from .registry import CLEANUP_FINALIZER, CRD_KEY, ResourceType

__all__ = ["DeleteOptions", "delete_collection", "delete_object"]

_POLICIES = ("Foreground", "Background", "Orphan")
_IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")


class DeleteOptions:
    def __init__(self, body: Any, query: dict[str, str]) -> None:
        body = body if isinstance(body, dict) else {}
        grace = body.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
        try:
            self.grace: int | None = None if grace in (None, "") else int(grace)
        except (TypeError, ValueError):
            raise StatusError.bad_request(f"invalid gracePeriodSeconds: {grace!r}") from None
        self.policy: str | None = body.get("propagationPolicy") or query.get("propagationPolicy")
        orphan = body.get("orphanDependents", query.get("orphanDependents"))
        if self.policy is None and orphan is not None:
            self.policy = "Orphan" if str(orphan).lower() == "true" else "Background"
        pre = body.get("preconditions") or {}
        self.pre_uid: str | None = pre.get("uid")
        self.pre_rv: str | None = pre.get("resourceVersion")
        dry = body.get("dryRun") or []
        self.dry_run = "All" in dry if isinstance(dry, list) else False
        if self.policy is not None and self.policy not in _POLICIES:
            raise StatusError(
                422,
                "Invalid",
                f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
                f'"{self.policy}": supported values: "Foreground", "Background", "Orphan"',
                {
                    "kind": "DeleteOptions",
                    "group": "meta.k8s.io",
                    "causes": [
                        {
                            "reason": "FieldValueNotSupported",
                            "field": "propagationPolicy",
                            "message": f'Unsupported value: "{self.policy}": supported values: '
                            '"Foreground", "Background", "Orphan"',
                        }
                    ],
                },
            )
        if self.grace is not None and self.grace < 0:
            self.grace = 1  # the apiserver clamps negative grace periods to 1 second


def _pod_grace(obj: Obj, opts: DeleteOptions) -> int:
    """Pods on a node wait for the kubelet; unscheduled or finished Pods go at once (pod strategy)."""
    spec = obj.get("spec") or {}
    phase = (obj.get("status") or {}).get("phase")
    if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
        return 0
    if opts.grace is not None:
        return opts.grace
    tgps = spec.get("terminationGracePeriodSeconds")
    return 30 if tgps is None else int(tgps)


def delete_object(
    core: ApiCore, rt: ResourceType, namespace: str | None, name: str, opts: DeleteOptions
) -> tuple[Obj, bool]:
    """Returns (object, removed_now)."""
    old = core.get(rt, namespace, name)
    meta = old["metadata"]
    if rt.key == ("", "namespaces") and name in _IMMORTAL_NAMESPACES:
        raise StatusError.forbidden("", "namespaces", name, "this namespace may not be deleted")
    if opts.pre_uid is not None and opts.pre_uid != meta.get("uid"):
        raise StatusError.conflict(
            rt.group,
            rt.plural,
            name,
            f"Precondition failed: UID in precondition: {opts.pre_uid}, "
            f"UID in object meta: {meta.get('uid')}",
        )
    if opts.pre_rv is not None and opts.pre_rv != meta.get("resourceVersion"):
        raise StatusError.conflict(
            rt.group,
            rt.plural,
            name,
            f"Precondition failed: ResourceVersion in precondition: {opts.pre_rv}, "
            f"ResourceVersion in object meta: {meta.get('resourceVersion')}",
        )
    grace = _pod_grace(old, opts) if rt.key == ("", "pods") else 0
    finalizers = list(meta.get("finalizers") or [])
    policy = opts.policy or (rt.default_propagation if rt.default_propagation != "Background" else None)
    if policy == "Foreground" and "foregroundDeletion" not in finalizers:
        finalizers.append("foregroundDeletion")
        finalizers = [f for f in finalizers if f != "orphan"]
    elif policy == "Orphan" and "orphan" not in finalizers:
        finalizers.append("orphan")
        finalizers = [f for f in finalizers if f != "foregroundDeletion"]
    elif policy == "Background":
        finalizers = (
            [f for f in finalizers if f not in ("orphan", "foregroundDeletion")]
            if not meta.get("deletionTimestamp")
            else finalizers
        )
    if rt.key == CRD_KEY and not meta.get("deletionTimestamp") and CLEANUP_FINALIZER not in finalizers:
        finalizers.append(CLEANUP_FINALIZER)
    pending_ns = rt.key == ("", "namespaces") and bool((old.get("spec") or {}).get("finalizers"))
    if not finalizers and grace == 0 and not pending_ns:
        if opts.dry_run:
            return old, True
        if meta.get("deletionTimestamp") is None or not meta.get("finalizers"):
            return core.remove(rt, old), True
    new = clone(old)
    nmeta = new["metadata"]
    nmeta["finalizers"] = finalizers
    if not finalizers:
        nmeta.pop("finalizers")
    if nmeta.get("deletionTimestamp") is None:
        now = core.clock.utcnow()
        nmeta["deletionTimestamp"] = format_time(now + timedelta(seconds=grace))
        nmeta["deletionGracePeriodSeconds"] = grace
        if nmeta.get("generation", 0) > 0:
            nmeta["generation"] += 1
        if rt.key == ("", "namespaces"):
            new.setdefault("status", {})["phase"] = "Terminating"
        if rt.key == CRD_KEY:
            status = new.setdefault("status", {})
            conditions = [c for c in status.get("conditions") or [] if c.get("type") != "Terminating"]
            conditions.append(
                {
                    "type": "Terminating",
                    "status": "True",
                    "lastTransitionTime": core.now(),
                    "reason": "InstanceDeletionPending",
                    "message": "CustomResourceDefinition marked for deletion; CustomResource deletion "
                    "will begin soon",
                }
            )
            status["conditions"] = conditions
    elif grace < nmeta.get("deletionGracePeriodSeconds", 0):
        # A shorter grace period moves the deadline forward, never back.
        now = core.clock.utcnow()
        nmeta["deletionTimestamp"] = format_time(now + timedelta(seconds=grace))
        nmeta["deletionGracePeriodSeconds"] = grace
    if new == old:
        return old, False
    if opts.dry_run:
        return new, False
    if not finalizers and nmeta.get("deletionGracePeriodSeconds", 0) == 0 and not pending_ns:
        return core.remove(rt, new), True
    core.storage.put(rt.key, new, old)
    hooks = core.hooks.get(rt.key)
    if hooks:
        hooks.after_write(core, rt, new, old)
    return new, False


def delete_collection(
    core: ApiCore, rt: ResourceType, namespace: str | None, matches: Any, opts: DeleteOptions
) -> list[Obj]:
    """Deletes every matching object one by one, like the generic store; returns what was deleted."""
    deleted = (delete_item(core, rt, key, opts) for key in collection_keys(core, rt, namespace, matches))
    return [obj for obj in deleted if obj is not None]


def collection_keys(
    core: ApiCore, rt: ResourceType, namespace: str | None, matches: Any
) -> list[tuple[str, str]]:
    """The ``(namespace, name)`` of every object a delete-collection takes, listed before any goes."""
    bucket = core.storage.bucket(rt.key)
    return [
        key
        for key in list(bucket.iter_namespace(namespace))
        if (obj := bucket.objects.get(key)) is not None and matches(obj)
    ]


def delete_item(core: ApiCore, rt: ResourceType, key: tuple[str, str], opts: DeleteOptions) -> Obj | None:
    """One item of a delete-collection; None when it went in the meantime."""
    try:
        deleted, _ = delete_object(core, rt, key[0] or None, key[1], opts)
    except StatusError as e:
        if e.code == 404:
            return None
        raise
    return deleted


def success_status(rt: ResourceType, obj: Obj) -> dict[str, Any]:
    details: dict[str, Any] = {"name": obj["metadata"]["name"]}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.plural
    details["uid"] = obj["metadata"].get("uid")
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}
