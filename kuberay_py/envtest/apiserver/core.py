"""Create / get / update / patch with kube-apiserver's registry semantics, independent of HTTP.

The rules follow ``k8s.io/apiserver/pkg/registry/generic/registry/store.go`` and the CR strategy
(``apiextensions-apiserver/pkg/registry/customresource/strategy.go``): server-owned metadata is
kept, optimistic concurrency on ``metadata.resourceVersion``, ``generation`` bumps on spec changes
only, the status subresource splits who may write what, and a write that changes nothing is not
a write (no new resourceVersion, no watch event) -- controllers rely on that to go quiet.
Every method is synchronous so no other request can interleave between read and write.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ...clock import Clock, RealClock
from .errors import Cause, StatusError
from .managedfields import track_update
from .meta import Obj, clone, format_time, new_uid, random_suffix, spec_changed
from .patch import apply_json_patch, apply_merge_patch, apply_strategic_merge_patch
from .quota import admit_pod
from .registry import Registry, ResourceType
from .store import Storage
from .validation import forbidden, invalid, validate_metadata

__all__ = ["ApiCore", "KindHooks", "Obj"]


class KindHooks(Protocol):
    """Per-kind behaviour (defaulting, extra validation, side effects) layered on the generic rules."""

    def prepare_create(self, core: ApiCore, rt: ResourceType, obj: Obj) -> list[Cause]: ...

    def prepare_update(
        self, core: ApiCore, rt: ResourceType, old: Obj, new: Obj, subresource: str | None
    ) -> list[Cause]: ...

    def after_write(self, core: ApiCore, rt: ResourceType, obj: Obj, old: Obj | None) -> None: ...

    def after_delete(self, core: ApiCore, rt: ResourceType, obj: Obj) -> None: ...


class ApiCore:
    def __init__(self, *, clock: Clock | None = None, history_size: int = 10_000) -> None:
        self.clock: Clock = clock or RealClock()
        self.registry = Registry()
        self.storage = Storage(history_size)
        self.hooks: dict[tuple[str, str], KindHooks] = {}
        # Called after every removal from storage (namespace/CRD finalization listen here).
        self.deletion_listeners: list[Callable[[ResourceType, Obj], None]] = []
        # (stored apiVersion, served apiVersion) -> conversion, for resources that share storage
        # across groups (Events); other versions differ only in apiVersion.
        self.conversions: dict[tuple[str, str], Callable[[Obj], Obj]] = {}

    def now(self) -> str:
        return format_time(self.clock.utcnow())

    # -- reads ------------------------------------------------------------------------------------

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> Obj:
        obj = self.storage.get(rt.key, namespace or "", name)
        if obj is None:
            raise StatusError.not_found(rt.group, rt.plural, name)
        return obj

    def present(self, rt: ResourceType, obj: Obj) -> Obj:
        """The object as the requested version shows it (CR versions, and both Event APIs, share storage)."""
        stored = obj.get("apiVersion")
        if stored == rt.api_version:
            return obj
        convert = self.conversions.get((str(stored), rt.api_version))
        if convert is not None:
            return convert(obj)
        return {**obj, "apiVersion": rt.api_version}

    # -- create -------------------------------------------------------------------------------------

    def _check_type(self, rt: ResourceType, body: Any) -> Obj:
        if not isinstance(body, dict):
            raise StatusError.bad_request(f"the object provided is unrecognized (must be of type {rt.kind})")
        kind = body.get("kind")
        api_version = body.get("apiVersion")
        if kind and kind != rt.kind:
            raise StatusError.bad_request(
                f"the object provided is unrecognized (must be of type {rt.kind}): {kind} in version "
                f'"{api_version}" cannot be handled as a {rt.kind}'
            )
        if api_version and api_version != rt.api_version:
            ok = any(
                api_version == t.api_version and t.group == rt.group for t in self.registry.by_key(rt.key)
            )
            if not ok:
                raise StatusError.bad_request(
                    f"the API version in the data ({api_version}) does not match the expected API version "
                    f"({rt.api_version})"
                )
        meta = body.get("metadata")
        if meta is None:
            body["metadata"] = {}
        elif not isinstance(meta, dict):
            raise StatusError.bad_request("metadata must be an object")
        body["kind"] = rt.kind
        body["apiVersion"] = rt.api_version
        return body

    def _check_namespace(self, rt: ResourceType, meta: Obj, namespace: str | None) -> None:
        if not rt.namespaced:
            meta.pop("namespace", None)
            return
        ns = meta.get("namespace")
        if ns and namespace and ns != namespace:
            raise StatusError.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = namespace or ns or ""

    def ensure_namespace_usable(self, rt: ResourceType, namespace: str, name: str) -> None:
        """NamespaceLifecycle admission: no content in missing or terminating namespaces."""
        ns = self.storage.get(("", "namespaces"), "", namespace)
        if ns is None:
            raise StatusError.not_found("", "namespaces", namespace)
        if ns["metadata"].get("deletionTimestamp"):
            err = StatusError.forbidden(
                rt.group,
                rt.plural,
                name,
                f"unable to create new content in namespace {namespace} because it is being terminated",
            )
            assert err.details is not None
            err.details["causes"] = [
                {
                    "reason": "NamespaceTerminating",
                    "message": f"namespace {namespace} is being terminated",
                    "field": "metadata.namespace",
                }
            ]
            raise err
        return

    def _refuse_if_crd_terminating(self, rt: ResourceType, meta: Obj) -> None:
        """apiextensions' ``forbidCreateAdmission``: no new custom resources while the CRD is deleted.

        kube-apiserver wraps the admission chain in it, so it answers before validation and the
        namespace checks, with admission's Forbidden naming the object as admission does (its
        name, else its generateName, else "Unknown"). Server-side apply creates go through here too.
        """
        if rt.crd_name is None:
            return
        crd = self.storage.get(("apiextensions.k8s.io", "customresourcedefinitions"), "", rt.crd_name)
        if crd is None or not crd["metadata"].get("deletionTimestamp"):
            return
        raise StatusError.forbidden(
            rt.group,
            rt.plural,
            str(meta.get("name") or meta.get("generateName") or "Unknown"),
            "create not allowed while custom resource definition is terminating",
        )

    def create(
        self,
        rt: ResourceType,
        namespace: str | None,
        body: Any,
        *,
        dry_run: bool = False,
        strict: bool = False,
    ) -> Obj:
        obj = self._check_type(rt, clone(body))
        meta: Obj = obj["metadata"]
        self._check_namespace(rt, meta, namespace)
        self._refuse_if_crd_terminating(rt, meta)
        if meta.get("resourceVersion"):
            raise StatusError.internal("resourceVersion should not be set on objects to be created")
        causes = validate_metadata(meta, rt.name_rule, creating=True)
        if causes:
            raise StatusError.invalid(
                rt.group, rt.kind, meta.get("name") or meta.get("generateName", ""), causes
            )
        if not meta.get("name"):
            meta["name"] = meta["generateName"] + random_suffix()
        name = meta["name"]
        if rt.namespaced:
            self.ensure_namespace_usable(rt, meta["namespace"], name)
        for k in ("uid", "deletionTimestamp", "deletionGracePeriodSeconds", "generation", "selfLink"):
            meta.pop(k, None)
        meta["uid"] = new_uid()
        meta["creationTimestamp"] = self.now()
        if rt.has_generation or rt.is_custom:
            meta["generation"] = 1
        if rt.status_subresource and rt.kind != "Node":
            obj.pop("status", None)
        hooks = self.hooks.get(rt.key)
        causes = hooks.prepare_create(self, rt, obj) if hooks else []
        if rt.schema is not None:
            causes += rt.schema.admit(obj, None)
            self._strict_check(rt, strict)
        if causes:
            raise StatusError.invalid(rt.group, rt.kind, name, causes)
        if self.storage.get(rt.key, meta.get("namespace") or "", name) is not None:
            raise StatusError.already_exists(rt.group, rt.plural, name)
        if rt.key == ("", "pods"):
            admit_pod(self.storage, obj)  # ResourceQuota: validating admission, after validation
        if dry_run:
            return obj
        self.storage.put(rt.key, obj, None)
        if hooks:
            hooks.after_write(self, rt, obj, None)
        return obj

    # -- update -------------------------------------------------------------------------------------

    def update(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        require_rv: bool = True,
        strict: bool = False,
        manager: str | None = None,
    ) -> Obj:
        new = self._check_type(rt, clone(body))
        meta: Obj = new["metadata"]
        if meta.get("name") and meta["name"] != name:
            raise StatusError.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
            )
        meta["name"] = name
        self._check_namespace(rt, meta, namespace)
        old = self.get(rt, namespace, name)
        uid = meta.get("uid")
        _check_uid_precondition(rt, name, uid, old)
        rv = meta.get("resourceVersion")
        if not rv:
            if require_rv and not rt.allow_unconditional_update:
                raise StatusError.invalid(
                    rt.group,
                    rt.kind,
                    name,
                    [invalid("metadata.resourceVersion", 0, "must be specified for an update")],
                )
        elif rv != old["metadata"]["resourceVersion"]:
            raise StatusError.stale(rt.group, rt.plural, name)
        return self._finish_update(
            rt, old, new, subresource=subresource, dry_run=dry_run, strict=strict, manager=manager
        )

    def _strict_check(self, rt: ResourceType, strict: bool) -> None:
        if strict and rt.schema is not None and rt.schema.pruned_fields():
            fields = ", ".join(f'unknown field "{f}"' for f in rt.schema.pruned_fields())
            raise StatusError.bad_request(f"strict decoding error: {fields}")

    def _finish_update(
        self,
        rt: ResourceType,
        old: Obj,
        new: Obj,
        *,
        subresource: str | None,
        dry_run: bool,
        strict: bool = False,
        manager: str | None = None,
    ) -> Obj:
        name = old["metadata"]["name"]
        old_meta = old["metadata"]
        if subresource == "status":
            status = new.get("status")
            managed = new["metadata"].get("managedFields")
            new = clone(old)
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = status
            if managed is not None:  # the status strategy keeps the request's managedFields
                new["metadata"]["managedFields"] = managed
        elif rt.status_subresource:
            if "status" in old:
                new["status"] = clone(old["status"])
            else:
                new.pop("status", None)
        meta = new["metadata"]
        for k in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "namespace",
        ):
            if k in old_meta:
                meta[k] = old_meta[k]
            else:
                meta.pop(k, None)
        meta["resourceVersion"] = old_meta["resourceVersion"]
        causes = validate_metadata(meta, rt.name_rule, creating=False)
        if old_meta.get("deletionTimestamp"):
            added = [f for f in meta.get("finalizers") or [] if f not in (old_meta.get("finalizers") or [])]
            if added:
                quoted = ", ".join(f'"{f}"' for f in added)
                causes.append(
                    forbidden(
                        "metadata.finalizers",
                        f"no new finalizers can be added if the object is being deleted, "
                        f"found new finalizers []string{{{quoted}}}",
                    )
                )
        hooks = self.hooks.get(rt.key)
        if hooks:
            causes += hooks.prepare_update(self, rt, old, new, subresource)
        if rt.schema is not None:
            causes += rt.schema.admit(new, old)
            self._strict_check(rt, strict)
        if causes:
            raise StatusError.invalid(rt.group, rt.kind, name, causes)
        if manager:
            track_update(rt, old, new, manager, subresource, self.now())
        if "generation" in old_meta and spec_changed(old, new, ignore_status=rt.status_subresource):
            meta["generation"] = old_meta["generation"] + 1
        if new == old:
            return old
        if dry_run:
            return new
        if (
            meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and meta.get("deletionGracePeriodSeconds", 0) == 0
            and not (rt.key == ("", "namespaces") and (new.get("spec") or {}).get("finalizers"))
        ):
            return self.remove(rt, new)
        self.storage.put(rt.key, new, old)
        if hooks:
            hooks.after_write(self, rt, new, old)
        return new

    def remove(self, rt: ResourceType, obj: Obj) -> Obj:
        """Drop an object from storage for good (the last step of every deletion path)."""
        gone = self.storage.delete(rt.key, obj)
        hooks = self.hooks.get(rt.key)
        if hooks:
            hooks.after_delete(self, rt, gone)
        for listener in list(self.deletion_listeners):
            listener(rt, gone)
        return gone

    # -- patch --------------------------------------------------------------------------------------

    def patch(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        patch_type: str,
        patch: Any,
        subresource: str | None = None,
        dry_run: bool = False,
        field_manager: str | None = None,
        strict: bool = False,
    ) -> Obj:
        """A JSON, merge or strategic merge patch of an existing object.

        Server-side apply (``apply.server_side_apply``), which may create, is a layer above.
        """
        old = self.get(rt, namespace, name)
        base = clone(self.present(rt, old))  # the patch is written against the served shape
        if patch_type == "merge":
            if not isinstance(patch, dict):
                raise StatusError.bad_request(
                    "json: cannot unmarshal into Go value of type map[string]interface {}"
                )
            patched = apply_merge_patch(base, patch)
        elif patch_type == "json":
            patched = apply_json_patch(base, patch)
        elif patch_type == "strategic":
            patched = apply_strategic_merge_patch(base, patch)
        else:
            raise StatusError.bad_request(f"unknown patch type {patch_type}")
        pmeta = patched.get("metadata") if isinstance(patched.get("metadata"), dict) else {}
        rv = pmeta.get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise StatusError.stale(rt.group, rt.plural, name)
        uid = pmeta.get("uid")
        _check_uid_precondition(rt, name, uid, old)
        new = self._check_type(rt, patched)
        new["metadata"]["name"] = name
        self._check_namespace(rt, new["metadata"], namespace)
        return self._finish_update(
            rt, old, new, subresource=subresource, dry_run=dry_run, strict=strict, manager=field_manager
        )


def _check_uid_precondition(rt: ResourceType, name: str, uid: object, old: Obj) -> None:
    """A write that names a UID must target that very object (a recreated namesake is a 409)."""
    if uid and uid != old["metadata"].get("uid"):
        raise StatusError.conflict(
            rt.group,
            rt.plural,
            name,
            f"Precondition failed: UID in precondition: {uid}, "
            f"UID in object meta: {old['metadata'].get('uid')}",
        )
