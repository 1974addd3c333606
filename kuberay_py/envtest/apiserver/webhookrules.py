"""Which webhooks a request goes to: kube-apiserver's rule, scope and selector matching.

A rule matches on operation, API group, version and resource (``"*"`` is every resource but no
subresource, ``"*/*"`` everything, ``"pods/status"`` one subresource, ``"*/status"`` that
subresource of any resource) and on scope (``Namespaced``, ``Cluster`` or ``"*"``). The
``namespaceSelector`` is checked against the namespace's labels (a Namespace's own labels for a
Namespace; cluster-scoped objects always match), the ``objectSelector`` against the new or the old
object's labels. Requests for the admissionregistration kinds never go to webhooks, so a broken
webhook cannot lock its own configuration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .registry import ResourceType
from .selectors import label_selector_from_doc

__all__ = ["AdmissionAttributes", "hook_matches", "rule_matches", "rules_match"]

Obj = dict[str, Any]


@dataclass(frozen=True)
class AdmissionAttributes:
    """What is being done to what (admission.Attributes)."""

    rt: ResourceType
    operation: str  # CREATE, UPDATE or DELETE
    namespace: str
    name: str
    subresource: str
    obj: Obj | None
    old: Obj | None
    dry_run: bool


def _has(values: Any, value: str) -> bool:
    return isinstance(values, list) and ("*" in values or value in values)


def _resource_matches(resources: Any, resource: str, sub: str) -> bool:
    if not isinstance(resources, list):
        return False
    full = f"{resource}/{sub}" if sub else resource
    for entry in resources:
        if entry in ("*/*", full):
            return True
        res, _, want_sub = str(entry).partition("/")
        if not want_sub:
            if res == "*" and not sub:
                return True
            continue
        if (res == "*" and want_sub == sub) or (res == resource and want_sub == "*" and sub):
            return True
    return False


def rule_matches(rule: Any, attrs: AdmissionAttributes) -> bool:
    if not isinstance(rule, dict):
        return False
    rt = attrs.rt
    scope = rule.get("scope", "*")
    if (scope == "Cluster" and rt.namespaced) or (scope == "Namespaced" and not rt.namespaced):
        return False
    return (
        _has(rule.get("operations"), attrs.operation)
        and _has(rule.get("apiGroups"), rt.group)
        and _has(rule.get("apiVersions"), rt.version)
        and _resource_matches(rule.get("resources"), rt.plural, attrs.subresource)
    )


def _selects(selector_doc: Any, objs: list[Obj | None]) -> bool:
    if selector_doc is None or selector_doc == {}:
        return True
    selector = label_selector_from_doc(selector_doc)
    if selector is None:
        return False
    return any(obj is not None and selector.matches(obj) for obj in objs)


def rules_match(hook: Obj, attrs: AdmissionAttributes) -> bool:
    """Whether ``hook``'s rules take this request, whatever the objects (webhook configurations
    themselves are never sent to webhooks, as in kube-apiserver)."""
    if attrs.rt.group == "admissionregistration.k8s.io":
        return False
    return any(rule_matches(rule, attrs) for rule in hook.get("rules") or [])


def hook_matches(hook: Obj, attrs: AdmissionAttributes, namespace_obj: Obj | None) -> bool:
    """Whether ``hook`` is called for this request (``namespace_obj``: the request's Namespace)."""
    if not rules_match(hook, attrs):
        return False
    if attrs.rt.key == ("", "namespaces"):
        if not _selects(hook.get("namespaceSelector"), [attrs.obj, attrs.old]):
            return False
    elif attrs.rt.namespaced and not _selects(hook.get("namespaceSelector"), [namespace_obj or {}]):
        return False
    return _selects(hook.get("objectSelector"), [attrs.obj, attrs.old])
