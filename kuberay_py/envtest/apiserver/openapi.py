"""A minimal OpenAPI v3 surface: enough for kubectl to know it can validate server-side.

kubectl (``--validate=strict``, the default) downloads ``/openapi/v3`` to learn whether the server
accepts the ``fieldValidation`` query parameter; without an answer it refuses to apply anything
("failed to download openapi"). Each group-version document lists, per resource, the object path
with a PATCH operation carrying ``x-kubernetes-group-version-kind`` and the ``fieldValidation``
parameter -- the only things kubectl's ``QueryParamVerifierV3`` reads. Custom resources' schemas
are published (``components.schemas`` with ``x-kubernetes-group-version-kind``) so
``kubectl explain`` works for them; built-in kinds' schemas are not (kubectl builds
client-side-apply patches from its compiled-in types instead).
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from .registry import Registry, ResourceType

__all__ = ["openapi_group_version", "openapi_index"]

_PARAMS = [
    {"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
    for n in ("dryRun", "fieldManager", "fieldValidation", "force")
]


def _gv_path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def _item_path(rt: ResourceType) -> str:
    base = "/" + _gv_path(rt.group, rt.version)
    if rt.namespaced:
        return f"{base}/namespaces/{{namespace}}/{rt.plural}/{{name}}"
    return f"{base}/{rt.plural}/{{name}}"


def openapi_group_version(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    types = registry.resources(group, version)
    if not types:
        return None
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for rt in types:
        if rt.schema is not None:
            rev = ".".join(reversed(rt.group.split(".")))
            schemas[f"{rev}.{rt.version}.{rt.kind}"] = {
                **rt.schema.raw,
                "x-kubernetes-group-version-kind": [
                    {"group": rt.group, "kind": rt.kind, "version": rt.version}
                ],
            }
        gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
        content = [
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ]
        if rt.strategic_merge:
            content.append("application/strategic-merge-patch+json")
        paths[_item_path(rt)] = {
            "patch": {
                "operationId": f"patch{rt.kind}",
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": gvk,
                "parameters": _PARAMS,
                "requestBody": {"content": {c: {"schema": {"type": "object"}} for c in content}},
                "responses": {"200": {"description": "OK"}},
            },
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def openapi_index(registry: Registry) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for group, versions in sorted(registry.groups().items()):
        for version in versions:
            doc = openapi_group_version(registry, group, version)
            digest = hashlib.sha256(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32].upper()
            path = _gv_path(group, version)
            out[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": out}
