"""Typed read access to the few Pod-template fields the builders and validation touch.

Pod templates stay plain dicts (see ``controllers.api.base``); these helpers give the common
lookups one spelling and tolerate missing or null intermediate keys, because a template that
came from a user may omit anything. They never mutate their argument.
"""

from __future__ import annotations

from typing import Any

from controllers.constants import RAY_CONTAINER_INDEX

__all__ = [
    "container_ports",
    "containers",
    "pod_spec",
    "ray_container",
    "resource_limits",
    "resource_requests",
    "template_annotations",
    "template_labels",
]


def pod_spec(template: dict[str, Any] | None) -> dict[str, Any]:
    """``template.spec``, or an empty dict."""
    spec = (template or {}).get("spec")
    return spec if isinstance(spec, dict) else {}


def containers(template: dict[str, Any] | None) -> list[dict[str, Any]]:
    """``template.spec.containers`` (only the mapping entries), or an empty list."""
    items = pod_spec(template).get("containers")
    if not isinstance(items, list):
        return []
    return [c for c in items if isinstance(c, dict)]


def ray_container(template: dict[str, Any] | None) -> dict[str, Any] | None:
    """The Ray container: KubeRay's convention is the first container of the template."""
    items = containers(template)
    return items[RAY_CONTAINER_INDEX] if len(items) > RAY_CONTAINER_INDEX else None


def template_labels(template: dict[str, Any] | None) -> dict[str, str]:
    meta = (template or {}).get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return dict(labels) if isinstance(labels, dict) else {}


def template_annotations(template: dict[str, Any] | None) -> dict[str, str]:
    meta = (template or {}).get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    return dict(annotations) if isinstance(annotations, dict) else {}


def container_ports(container: dict[str, Any] | None) -> list[dict[str, Any]]:
    """``container.ports`` (only the mapping entries), or an empty list."""
    ports = (container or {}).get("ports")
    if not isinstance(ports, list):
        return []
    return [p for p in ports if isinstance(p, dict)]


def _resources(container: dict[str, Any] | None, key: str) -> dict[str, int | str]:
    res = (container or {}).get("resources")
    values = res.get(key) if isinstance(res, dict) else None
    return dict(values) if isinstance(values, dict) else {}


def resource_limits(container: dict[str, Any] | None) -> dict[str, int | str]:
    """``container.resources.limits`` as quantities (strings or ints, as written)."""
    return _resources(container, "limits")


def resource_requests(container: dict[str, Any] | None) -> dict[str, int | str]:
    """``container.resources.requests`` as quantities (strings or ints, as written)."""
    return _resources(container, "requests")
