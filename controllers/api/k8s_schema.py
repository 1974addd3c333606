"""OpenAPI v3 schemas for Kubernetes types, built from kubernetes_asyncio's generated models.

Why this source: the CRDs embed the core/v1 Pod template, Service, env vars and friends, and
hand-typing those thousands of lines would drift from Kubernetes the day it is written.
kubernetes_asyncio (pinned in pyproject) is generated from the Kubernetes OpenAPI document and
ships, for every type, ``openapi_types`` (field → type), ``attribute_map`` (field → JSON name),
the field descriptions (property docstrings) and the required fields (setters that refuse
``None``). That is the structure of the schema, offline and versioned with the client.

What the client generator dropped is the Kubernetes *extensions*: ``x-kubernetes-list-type`` /
``list-map-keys`` / ``map-type``, ``format: int32|int64``, ``default`` values, and which strings
are resource Quantities. Those come from ``k8s_overlay.json``, keyed ``Model.jsonField``, which
``controllers.api.overlay`` extracts mechanically from KubeRay's CRDs (controller-gen's output
from the same Go types). The overlay only ever adds keywords to a node whose shape came from
kubernetes_asyncio; it cannot invent a field.

Type mapping (openapi-generator's spelling → OpenAPI v3):
``str`` string · ``int`` integer · ``bool`` boolean · ``float`` number · ``datetime`` string
date-time · ``object`` IntOrString (the only free ``object`` in these types) · ``list[X]``
array · ``dict(str, X)`` object with additionalProperties · ``V1Foo`` nested object.
``V1ObjectMeta`` becomes the embedded-object metadata controller-gen emits for CRDs (name,
namespace, labels, annotations, finalizers): anything else would be pruned by the API server
anyway, and this keeps the schema the same shape as KubeRay's.
"""

from __future__ import annotations

import copy
import importlib.resources
import inspect
import json
import re
from functools import cache
from typing import Any

import kubernetes_asyncio.client.models as k8s_models

__all__ = ["INT_OR_STRING", "K8sSchemaBuilder", "embedded_object_meta", "load_overlay"]

INT_OR_STRING: dict[str, Any] = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "x-kubernetes-int-or-string": True,
}

_LIST = re.compile(r"^list\[(.+)\]$")
_DICT = re.compile(r"^dict\(str, (.+)\)$")
_NOQA = re.compile(r"\s*# noqa: E501\s*$")
_SCALARS: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "bool": {"type": "boolean"},
    "float": {"type": "number"},
    "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
}
# Keywords an overlay entry may carry. Never structure (properties/items/...) and never "type".
OVERLAY_KEYWORDS = (
    "default",
    "enum",
    "format",
    "maxLength",
    "maximum",
    "minLength",
    "minimum",
    "nullable",
    "pattern",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-validations",
)


def embedded_object_meta() -> dict[str, Any]:
    """The metadata schema controller-gen writes for an embedded ObjectMeta."""
    string_map = {"additionalProperties": {"type": "string"}, "type": "object"}
    return {
        "properties": {
            "annotations": dict(string_map),
            "finalizers": {"items": {"type": "string"}, "type": "array"},
            "labels": dict(string_map),
            "name": {"type": "string"},
            "namespace": {"type": "string"},
        },
        "type": "object",
    }


@cache
def load_overlay() -> dict[str, dict[str, Any]]:
    text = importlib.resources.files("controllers.api").joinpath("k8s_overlay.json").read_text()
    data: dict[str, dict[str, Any]] = json.loads(text)
    return data


@cache
def _description(cls: type, attr: str) -> str | None:
    doc = getattr(cls, attr).__doc__ or ""
    paragraphs = [p.strip() for p in doc.split("\n\n")]
    if len(paragraphs) < 3:
        return None
    lines = [_NOQA.sub("", line.strip()) for line in paragraphs[1].splitlines()]
    text = "\n".join(line for line in lines if line)
    return text or None


@cache
def _required(cls: type, attr: str) -> bool:
    setter = getattr(cls, attr).fset
    return setter is not None and "must not be `None`" in inspect.getsource(setter)


def _apply(node: dict[str, Any], extra: dict[str, Any] | None) -> dict[str, Any]:
    if not extra:
        return node
    node = {**node, **{k: v for k, v in extra.items() if k in OVERLAY_KEYWORDS}}
    if node.get("x-kubernetes-int-or-string"):
        node.pop("type", None)
        node.pop("format", None)
        node = {**node, **INT_OR_STRING}
    return node


class K8sSchemaBuilder:
    """Builds (and memoises) the schema of one kubernetes_asyncio model and everything below it.

    ``origins`` records, for each generated node, the overlay key it corresponds to, so the
    overlay extractor can walk KubeRay's CRD alongside and the comparison tests can name fields.
    """

    def __init__(
        self, overlay: dict[str, dict[str, Any]] | None = None, *, descriptions: bool = False
    ) -> None:
        self.overlay = load_overlay() if overlay is None else overlay
        self.descriptions = descriptions
        self._memo: dict[str, dict[str, Any]] = {}

    def model_schema(self, name: str, *, _stack: tuple[str, ...] = ()) -> dict[str, Any]:
        """The object schema for ``V1Foo`` (recursion is cut with preserve-unknown-fields)."""
        if name == "V1ObjectMeta":
            return embedded_object_meta()
        if name in self._memo:
            # A fresh copy each time: YAML would otherwise emit anchors for shared nodes.
            return copy.deepcopy(self._memo[name])
        if name in _stack:
            # Kubernetes' core types are not recursive today (JSONSchemaProps is, and is not
            # embedded here); if one becomes so, stop rather than loop, and keep the data.
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        cls = getattr(k8s_models, name)
        props: dict[str, Any] = {}
        required: list[str] = []
        for attr, type_str in cls.openapi_types.items():
            json_name = cls.attribute_map[attr]
            key = f"{name}.{json_name}"
            node = self._type_schema(type_str, key, (*_stack, name))
            node = _apply(node, self.overlay.get(key))
            if self.descriptions:
                desc = _description(cls, attr)
                if desc:
                    node = {"description": desc, **node}
            props[json_name] = node
            if _required(cls, attr):
                required.append(json_name)
        schema: dict[str, Any] = {"properties": dict(sorted(props.items()))}
        if required:
            schema["required"] = sorted(required)
        schema["type"] = "object"
        schema = _apply(schema, self.overlay.get(name))
        self._memo[name] = schema
        return copy.deepcopy(schema)

    def _type_schema(self, type_str: str, key: str, stack: tuple[str, ...]) -> dict[str, Any]:
        if type_str in _SCALARS:
            return dict(_SCALARS[type_str])
        if type_str == "object":
            return dict(INT_OR_STRING)
        if m := _LIST.match(type_str):
            items = self._type_schema(m.group(1), f"{key}[]", stack)
            return {"items": _apply(items, self.overlay.get(f"{key}[]")), "type": "array"}
        if m := _DICT.match(type_str):
            values = self._type_schema(m.group(1), f"{key}{{}}", stack)
            return {"additionalProperties": _apply(values, self.overlay.get(f"{key}{{}}")), "type": "object"}
        if hasattr(k8s_models, type_str):
            return self.model_schema(type_str, _stack=stack)
        raise ValueError(f"unknown kubernetes_asyncio type {type_str!r} at {key}")
