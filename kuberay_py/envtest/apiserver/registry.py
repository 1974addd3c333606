"""The resource types the built-in server serves, and how each behaves.

kube-apiserver gives every resource a "strategy" (generation, status split, unconditional
updates, what DELETE returns). The registry keeps those as data on :class:`ResourceType`, so the
handlers stay generic and a CRD's resources are just more entries added once it is Established.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CLEANUP_FINALIZER", "CRD_KEY", "Registry", "ResourceType"]

# The CRD resource and the finalizer kube-apiserver adds when one is deleted (its custom resources
# are removed first). Here, below both crds.py and deletion.py, which each need them.
CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status_subresource: bool = False
    # Built-in kinds that track spec changes in metadata.generation (CRs always do).
    has_generation: bool = False
    allow_unconditional_update: bool = True
    return_deleted_object: bool = False
    # "subdomain" (DNS-1123 subdomain), "label" (DNS-1123 label), "dns1035", "path" (path segment)
    name_rule: str = "subdomain"
    strategic_merge: bool = True
    # Extra field selectors on top of metadata.name / metadata.namespace.
    field_labels: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    # What DELETE does without a propagationPolicy (batch/v1 Jobs still orphan, for compatibility).
    default_propagation: str = "Background"
    # CRD-backed types only.
    crd_name: str | None = None
    schema: Any = None  # kuberay_py.envtest.apiserver.schema.Schema | None
    scale: dict[str, str] | None = None  # specReplicasPath/statusReplicasPath/labelSelectorPath
    storage_version: str = ""
    printer_columns: tuple[Any, ...] = ()  # a CRD version's additionalPrinterColumns
    # Another resource whose storage this one shares (events.k8s.io/v1 Events are core/v1 Events).
    shares_storage_of: tuple[str, str] | None = None

    @property
    def key(self) -> tuple[str, str]:
        """Storage key: all served versions of one resource share their objects (and hooks)."""
        return self.shares_storage_of or (self.group, self.plural)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def singular_name(self) -> str:
        return self.singular or self.kind.lower()

    @property
    def is_custom(self) -> bool:
        return self.crd_name is not None


@dataclass
class Registry:
    """Lookup by (group, version, plural) plus the grouping discovery needs."""

    _types: dict[tuple[str, str, str], ResourceType] = field(default_factory=dict)
    # group -> ordered versions (preferred first)
    _group_versions: dict[str, list[str]] = field(default_factory=dict)

    def add(self, rt: ResourceType, *, preferred: bool = False) -> None:
        self._types[(rt.group, rt.version, rt.plural)] = rt
        versions = self._group_versions.setdefault(rt.group, [])
        if rt.version not in versions:
            if preferred:
                versions.insert(0, rt.version)
            else:
                versions.append(rt.version)

    def add_all(self, types: Iterable[ResourceType]) -> None:
        for rt in types:
            self.add(rt)

    def remove_crd(self, crd_name: str) -> None:
        for k, rt in list(self._types.items()):
            if rt.crd_name == crd_name:
                del self._types[k]
        live = {(g, v) for (g, v, _p) in self._types}
        for group, versions in list(self._group_versions.items()):
            kept = [v for v in versions if (group, v) in live]
            if kept:
                self._group_versions[group] = kept
            else:
                del self._group_versions[group]

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._types.get((group, version, plural))

    def by_key(self, key: tuple[str, str]) -> list[ResourceType]:
        return [rt for rt in self._types.values() if rt.key == key]

    def has_group_version(self, group: str, version: str) -> bool:
        return version in self._group_versions.get(group, [])

    def groups(self) -> dict[str, list[str]]:
        return {g: list(v) for g, v in self._group_versions.items()}

    def resources(self, group: str, version: str) -> list[ResourceType]:
        return sorted(
            (rt for (g, v, _p), rt in self._types.items() if g == group and v == version),
            key=lambda rt: rt.plural,
        )

    def all_types(self) -> list[ResourceType]:
        return list(self._types.values())
