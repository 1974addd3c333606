"""Discovery documents (``/version``, ``/api``, ``/apis``, group and resource lists).

kubectl and dynamic clients map kinds to URLs through these, and they decide whether a CRD is
usable (its resources appear once Established), so the shapes match kube-apiserver's legacy
(non-aggregated) discovery exactly.
"""

from __future__ import annotations

from typing import Any

from .crds import version_priority
from .registry import Registry, ResourceType

__all__ = ["VERSION_INFO", "api_group", "api_group_list", "api_versions", "resource_list"]

VERSION_INFO: dict[str, str] = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0+kuberay-py-builtin",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.23.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group_doc(name: str, versions: list[str]) -> dict[str, Any]:
    ordered = sorted(versions, key=version_priority)
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in ordered]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(registry: Registry) -> dict[str, Any]:
    groups = [_group_doc(g, vs) for g, vs in sorted(registry.groups().items()) if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, group: str) -> dict[str, Any] | None:
    versions = registry.groups().get(group)
    if not group or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_doc(group, versions)}


def _entry(rt: ResourceType) -> dict[str, Any]:
    e: dict[str, Any] = {
        "name": rt.plural,
        "singularName": rt.singular_name,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": list(rt.verbs),
    }
    if rt.short_names:
        e["shortNames"] = list(rt.short_names)
    if rt.categories:
        e["categories"] = list(rt.categories)
    return e


def resource_list(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    if not registry.has_group_version(group, version):
        return None
    resources: list[dict[str, Any]] = []
    for rt in registry.resources(group, version):
        resources.append(_entry(rt))
        sub = {"singularName": "", "namespaced": rt.namespaced, "kind": rt.kind}
        if rt.status_subresource:
            resources.append({"name": f"{rt.plural}/status", **sub, "verbs": ["get", "patch", "update"]})
        if rt.scale is not None:
            resources.append(
                {
                    "name": f"{rt.plural}/scale",
                    **sub,
                    "group": "autoscaling",
                    "version": "v1",
                    "kind": "Scale",
                    "verbs": ["get", "patch", "update"],
                }
            )
        if rt.key == ("", "pods"):
            resources.append({"name": "pods/binding", **sub, "kind": "Binding", "verbs": ["create"]})
        if rt.key == ("", "serviceaccounts"):
            resources.append(
                {
                    "name": "serviceaccounts/token",
                    **sub,
                    "group": "authentication.k8s.io",
                    "version": "v1",
                    "kind": "TokenRequest",
                    "verbs": ["create"],
                }
            )
        if rt.key == ("", "namespaces"):
            resources.append({"name": "namespaces/finalize", **sub, "verbs": ["update"]})
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}
