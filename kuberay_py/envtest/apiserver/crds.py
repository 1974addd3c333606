"""CustomResourceDefinitions: validation, Established conditions, serving and cleanup.

Like kube-apiserver, a new CRD's resources are not served by the create call itself: the
``Established`` condition is set a moment later, and only then do its URLs answer. Clients that
create a CRD and immediately use it must wait for ``Established`` (as envtest's
``WaitForCRDs`` does). Deleting a CRD adds the ``customresourcecleanup`` finalizer, deletes every
custom resource, and removes the CRD (and its URLs) once they are gone.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from .core import ApiCore, Obj
from .errors import Cause, StatusError
from .meta import clone
from .registry import CLEANUP_FINALIZER, CRD_KEY, ResourceType
from .schema import Schema
from .validation import field_cause, invalid, required

__all__ = ["CLEANUP_FINALIZER", "CRD_KEY", "CrdHooks", "version_priority"]


_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes version ordering: GA > beta > alpha, higher numbers first, others last."""
    m = _VERSION_RE.match(version)
    if not m:
        return (3, 0, 0, version)
    major = int(m.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor, version)


def _condition(type_: str, reason: str, message: str, now: str) -> dict[str, Any]:
    return {"type": type_, "status": "True", "lastTransitionTime": now, "reason": reason, "message": message}


def accepted_names(spec: dict[str, Any]) -> dict[str, Any]:
    names: dict[str, Any] = clone(spec.get("names") or {})
    names.setdefault("singular", str(names.get("kind", "")).lower())
    names.setdefault("listKind", f"{names.get('kind', '')}List")
    return names


def types_for(crd: Obj) -> list[ResourceType]:
    spec = crd.get("spec") or {}
    names = accepted_names(spec)
    versions = [v for v in spec.get("versions") or [] if v.get("served")]
    storage = next((v["name"] for v in spec.get("versions") or [] if v.get("storage")), "")
    out: list[ResourceType] = []
    for v in versions:
        sub = v.get("subresources") or {}
        raw_schema = ((v.get("schema") or {}).get("openAPIV3Schema")) or {}
        selectable = tuple(str(f.get("jsonPath", "")).lstrip(".") for f in v.get("selectableFields") or [])
        out.append(
            ResourceType(
                group=spec["group"],
                version=v["name"],
                kind=names["kind"],
                plural=names["plural"],
                namespaced=spec.get("scope") == "Namespaced",
                singular=names["singular"],
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                status_subresource="status" in sub,
                has_generation=True,
                allow_unconditional_update=False,
                return_deleted_object=True,
                strategic_merge=False,
                field_labels=selectable,
                crd_name=crd["metadata"]["name"],
                schema=Schema(raw_schema) if raw_schema else None,
                scale=sub.get("scale"),
                printer_columns=tuple(v.get("additionalPrinterColumns") or ()),
                storage_version=storage,
            )
        )
    return out


def validate_crd(crd: Obj) -> list[Cause]:
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return [required("spec")]
    causes: list[Cause] = []
    group = spec.get("group")
    names = spec.get("names") or {}
    if not group:
        causes.append(required("spec.group"))
    elif "." not in group:
        causes.append(invalid("spec.group", group, "should be a domain with at least one dot"))
    if not names.get("plural"):
        causes.append(required("spec.names.plural"))
    if not names.get("kind"):
        causes.append(required("spec.names.kind"))
    if names.get("plural") and group and crd["metadata"].get("name") != f"{names['plural']}.{group}":
        causes.append(
            invalid("metadata.name", crd["metadata"].get("name"), 'must be spec.names.plural+"."+spec.group')
        )
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        causes.append(
            field_cause(
                "FieldValueNotSupported",
                "spec.scope",
                f'Unsupported value: "{spec.get("scope", "")}": supported values: "Cluster", "Namespaced"',
            )
        )
    versions = spec.get("versions") or []
    if not versions:
        causes.append(required("spec.versions", "must have exactly one version marked as storage version"))
    elif sum(1 for v in versions if v.get("storage")) != 1:
        causes.append(
            invalid("spec.versions", versions, "must have exactly one version marked as storage version")
        )
    for i, v in enumerate(versions):
        if not v.get("name"):
            causes.append(required(f"spec.versions[{i}].name"))
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        if not isinstance(schema, dict):
            causes.append(required(f"spec.versions[{i}].schema.openAPIV3Schema", "schemas are required"))
    return causes


class CrdHooks:
    def prepare_create(self, core: ApiCore, rt: ResourceType, obj: Obj) -> list[Cause]:
        causes = validate_crd(obj)
        if not causes:
            obj["status"] = {
                "conditions": [],
                "acceptedNames": {"plural": "", "kind": ""},
                "storedVersions": [],
            }
        return causes

    def prepare_update(
        self, core: ApiCore, rt: ResourceType, old: Obj, new: Obj, subresource: str | None
    ) -> list[Cause]:
        if subresource == "status":
            return []
        causes = validate_crd(new)
        ospec, nspec = old.get("spec") or {}, new.get("spec") or {}
        if ospec.get("group") != nspec.get("group"):
            causes.append(invalid("spec.group", nspec.get("group"), "field is immutable"))
        if ospec.get("scope") != nspec.get("scope"):
            causes.append(invalid("spec.scope", nspec.get("scope"), "field is immutable"))
        return causes

    def after_write(self, core: ApiCore, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        name = obj["metadata"]["name"]
        loop = asyncio.get_running_loop()
        if obj["metadata"].get("deletionTimestamp"):
            loop.call_soon(cleanup, core, name)
        elif old is None or old.get("spec") != obj.get("spec"):
            loop.call_soon(establish, core, name)

    def after_delete(self, core: ApiCore, rt: ResourceType, obj: Obj) -> None:
        spec = obj.get("spec") or {}
        core.registry.remove_crd(obj["metadata"]["name"])
        key = (spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))
        if not core.registry.by_key(key):
            core.storage.drop_bucket(key)


def _crd_type(core: ApiCore) -> ResourceType:
    rt = core.registry.get(*CRD_KEY[:1], "v1", CRD_KEY[1])
    assert rt is not None
    return rt


def establish(core: ApiCore, name: str) -> None:
    """What the CRD controllers do: accept the names, mark Established, start serving."""
    crd = core.storage.get(CRD_KEY, "", name)
    if crd is None or crd["metadata"].get("deletionTimestamp"):
        return
    core.registry.remove_crd(name)
    types = types_for(crd)
    preferred = sorted(types, key=lambda t: version_priority(t.version))
    for rt in preferred:
        core.registry.add(rt)
    if types:
        group = types[0].group
        order = sorted(core.registry.groups().get(group, []), key=version_priority)
        core.registry._group_versions[group] = order
    now = core.now()
    spec = crd["spec"]
    status = clone(crd.get("status") or {})
    conditions = [
        c for c in status.get("conditions") or [] if c.get("type") not in ("NamesAccepted", "Established")
    ]
    conditions.append(_condition("NamesAccepted", "NoConflicts", "no conflicts found", now))
    conditions.append(
        _condition("Established", "InitialNamesAccepted", "the initial names have been accepted", now)
    )
    status["conditions"] = conditions
    status["acceptedNames"] = accepted_names(spec)
    stored = list(status.get("storedVersions") or [])
    storage = next((v["name"] for v in spec.get("versions") or [] if v.get("storage")), None)
    if storage and storage not in stored:
        stored.append(storage)
    status["storedVersions"] = stored
    if status != crd.get("status"):
        new = clone(crd)
        new["status"] = status
        core.update(_crd_type(core), None, name, new, subresource="status")


def cleanup(core: ApiCore, name: str) -> None:
    """The CRD finalizer: delete every custom resource, then let the CRD go."""
    from .deletion import DeleteOptions, delete_collection

    crd = core.storage.get(CRD_KEY, "", name)
    if crd is None:
        return
    types = [rt for rt in core.registry.all_types() if rt.crd_name == name]
    if types:
        rt = types[0]
        delete_collection(core, rt, None, lambda _o: True, DeleteOptions(None, {}))
        if core.storage.bucket(rt.key).objects:
            # Custom resources with finalizers hold the CRD; retry when one of them goes away.
            def retry(deleted_rt: ResourceType, _obj: Obj) -> None:
                if deleted_rt.key == rt.key and not core.storage.bucket(rt.key).objects:
                    core.deletion_listeners.remove(retry)
                    asyncio.get_running_loop().call_soon(cleanup, core, name)

            core.deletion_listeners.append(retry)
            return
    crd = core.storage.get(CRD_KEY, "", name)
    if crd is None or CLEANUP_FINALIZER not in (crd["metadata"].get("finalizers") or []):
        return
    new = clone(crd)
    new["metadata"]["finalizers"] = [f for f in new["metadata"]["finalizers"] if f != CLEANUP_FINALIZER]
    try:
        core.update(_crd_type(core), None, name, new)
    except StatusError:
        return
