"""RBAC policy evaluation: kube-apiserver's RBAC authorizer and its escalation check, over plain dicts.

Follows ``plugin/pkg/auth/authorizer/rbac`` and ``pkg/registry/rbac/validation``: the rules that
apply to a user in a namespace are those of every ClusterRoleBinding naming the user (any
namespace) and, in that namespace, of every RoleBinding naming it, a RoleBinding to a ClusterRole
granting that ClusterRole's rules only there. A request is allowed when one rule matches its
verb, API group, resource (``resource/subresource``, ``*``, ``*/subresource``) and name, or its
non-resource path (a trailing ``*`` is a prefix). A binding whose role does not exist contributes
nothing but an error that the 403's reason reports (``RBAC: role.rbac... "x" not found``).

The same resolver backs creating Roles and RoleBindings: a user may only grant what it holds
(``Covers`` over rules broken down to one group, resource, verb and name each), unless it is in
``system:masters`` or is allowed ``escalate`` (roles) or ``bind`` (bindings).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from .authn import UserInfo
from .requestinfo import Attributes

__all__ = [
    "Decision",
    "PolicySource",
    "aggregate",
    "authorize",
    "compact_string",
    "covers",
    "escalation_message",
    "role_reference_rules",
    "rule_allows",
    "rules_for",
]

Rule = dict[str, Any]
Obj = dict[str, Any]


class PolicySource(Protocol):
    """Read access to the four RBAC kinds (the authorizer's listers)."""

    def cluster_role_bindings(self) -> list[Obj]: ...

    def role_bindings(self, namespace: str) -> list[Obj]: ...

    def role(self, namespace: str, name: str) -> Obj | None: ...

    def cluster_role(self, name: str) -> Obj | None: ...


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


def _strings(rule: Rule, key: str) -> list[str]:
    values = rule.get(key) or []
    return [str(v) for v in values] if isinstance(values, list) else []


# -- matching a request (rbacv1helpers) ---------------------------------------------------------------


def _resource_matches(rule: Rule, combined: str, subresource: str) -> bool:
    for res in _strings(rule, "resources"):
        if res in ("*", combined):
            return True
        if (
            subresource
            and len(res) == len(subresource) + 2
            and res.startswith("*/")
            and res.endswith(subresource)
        ):
            return True
    return False


def _url_matches(rule_url: str, path: str) -> bool:
    return rule_url in ("*", path) or (rule_url.endswith("*") and path.startswith(rule_url.rstrip("*")))


def rule_allows(attrs: Attributes, rule: Rule) -> bool:
    verbs = _strings(rule, "verbs")
    if "*" not in verbs and attrs.verb not in verbs:
        return False
    if not attrs.resource_request:
        return any(_url_matches(u, attrs.path) for u in _strings(rule, "nonResourceURLs"))
    groups = _strings(rule, "apiGroups")
    if "*" not in groups and attrs.api_group not in groups:
        return False
    if not _resource_matches(rule, attrs.combined_resource, attrs.subresource):
        return False
    names = _strings(rule, "resourceNames")
    return not names or attrs.name in names


# -- which rules apply (DefaultRuleResolver) ----------------------------------------------------------


def _applies(user: UserInfo, subject: Any, namespace: str) -> bool:
    if not isinstance(subject, dict):
        return False
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return bool(user.name == name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        sa_namespace = subject.get("namespace") or namespace
        return bool(sa_namespace) and user.name == f"system:serviceaccount:{sa_namespace}:{name}"
    return False


def _subject_text(subject: dict[str, Any], binding_namespace: str) -> str:
    kind, name = subject.get("kind", ""), subject.get("name", "")
    if kind == "ServiceAccount":
        return f'{kind} "{name}/{subject.get("namespace") or binding_namespace}"'
    return f'{kind} "{name}"'


def _describe(binding: Obj, subject: dict[str, Any]) -> str:
    meta, ref = binding.get("metadata") or {}, binding.get("roleRef") or {}
    namespace = meta.get("namespace") or ""
    if binding.get("kind") == "ClusterRoleBinding":
        label = f'ClusterRoleBinding "{meta.get("name", "")}"'
    else:
        label = f'RoleBinding "{meta.get("name", "")}/{namespace}"'
    return f'{label} of {ref.get("kind", "")} "{ref.get("name", "")}" to {_subject_text(subject, namespace)}'


def _describer(binding: Obj, subject: dict[str, Any]) -> Callable[[], str]:
    return lambda: _describe(binding, subject)


def role_reference_rules(source: PolicySource, ref: Any, namespace: str) -> tuple[list[Rule], str | None]:
    """The rules a roleRef points at, or the lister's error (``GetRoleReferenceRules``)."""
    ref = ref if isinstance(ref, dict) else {}
    kind, name = ref.get("kind"), str(ref.get("name") or "")
    if kind == "Role":
        role = source.role(namespace, name)
        missing = f'role.rbac.authorization.k8s.io "{name}" not found'
    elif kind == "ClusterRole":
        role = source.cluster_role(name)
        missing = f'clusterrole.rbac.authorization.k8s.io "{name}" not found'
    else:
        return [], f'unsupported role reference kind: "{kind}"'
    if role is None:
        return [], missing
    return [r for r in role.get("rules") or [] if isinstance(r, dict)], None


Visit = tuple[Callable[[], str] | None, Rule | None, str | None]


def visit_rules(source: PolicySource, user: UserInfo, namespace: str) -> Iterator[Visit]:
    """Each applicable rule with a lazy description of its binding, or a resolution error."""
    bindings = [(b, "") for b in source.cluster_role_bindings()]
    if namespace:
        bindings += [(b, namespace) for b in source.role_bindings(namespace)]
    for binding, scope in bindings:
        subjects = binding.get("subjects") or []
        subject = next((s for s in subjects if _applies(user, s, scope)), None)
        if subject is None:
            continue
        rules, error = role_reference_rules(source, binding.get("roleRef"), scope)
        if error is not None:
            yield None, None, error
            continue
        describe = _describer(binding, subject)
        for rule in rules:
            yield describe, rule, None


def aggregate(errors: list[str]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``: one message, or ``[a, b]`` without repeats."""
    unique = list(dict.fromkeys(errors))
    if len(errors) == 1 or len(unique) == 1:
        return unique[0] if unique else ""
    return "[" + ", ".join(unique) + "]"


def authorize(source: PolicySource, attrs: Attributes) -> Decision:
    errors: list[str] = []
    for describe, rule, error in visit_rules(source, attrs.user, attrs.namespace):
        if rule is not None and describe is not None and rule_allows(attrs, rule):
            return Decision(True, f"RBAC: allowed by {describe()}")
        if error is not None:
            errors.append(error)
    return Decision(False, f"RBAC: {aggregate(errors)}" if errors else "")


def rules_for(source: PolicySource, user: UserInfo, namespace: str) -> tuple[list[Rule], list[str]]:
    rules: list[Rule] = []
    errors: list[str] = []
    for _, rule, error in visit_rules(source, user, namespace):
        if rule is not None:
            rules.append(rule)
        if error is not None:
            errors.append(error)
    return rules, errors


# -- escalation (policy_comparator.go, compact.go) ----------------------------------------------------


def _breakdown(rule: Rule) -> list[Rule]:
    out: list[Rule] = []
    names = _strings(rule, "resourceNames")
    verbs = _strings(rule, "verbs")
    for group in _strings(rule, "apiGroups"):
        for resource in _strings(rule, "resources"):
            for verb in verbs:
                base = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
                out += [{**base, "resourceNames": [n]} for n in names] if names else [base]
    for url in _strings(rule, "nonResourceURLs"):
        out += [{"nonResourceURLs": [url], "verbs": [verb]} for verb in verbs]
    return out


def _resources_cover(owned: list[str], wanted: list[str]) -> bool:
    if "*" in owned or set(wanted) <= set(owned):
        return True
    for path in wanted:
        if path in owned:
            continue
        if "/" not in path or "*/" + path.split("/", 1)[1] not in owned:
            return False
    return True


def _rule_covers(owner: Rule, sub: Rule) -> bool:
    def all_of(key: str, wildcard: str | None) -> bool:
        owned = _strings(owner, key)
        return (wildcard is not None and wildcard in owned) or set(_strings(sub, key)) <= set(owned)

    urls_ok = all(
        any(
            o == u or (o.endswith("*") and u.startswith(o.rstrip("*")))
            for o in _strings(owner, "nonResourceURLs")
        )
        for u in _strings(sub, "nonResourceURLs")
    )
    owner_names, sub_names = _strings(owner, "resourceNames"), _strings(sub, "resourceNames")
    names_ok = not owner_names or (bool(sub_names) and set(sub_names) <= set(owner_names))
    return (
        all_of("verbs", "*")
        and all_of("apiGroups", "*")
        and _resources_cover(_strings(owner, "resources"), _strings(sub, "resources"))
        and names_ok
        and urls_ok
    )


def covers(owner: list[Rule], requested: list[Rule]) -> tuple[bool, list[Rule]]:
    """Whether ``owner`` holds every permission in ``requested``; the atoms it lacks."""
    missing = [
        sub for rule in requested for sub in _breakdown(rule) if not any(_rule_covers(o, sub) for o in owner)
    ]
    return not missing, missing


def _compact(rules: list[Rule]) -> list[Rule]:
    """Atoms that differ only by verb become one rule (``CompactRules``)."""
    simple: dict[tuple[str, str, str | None], Rule] = {}
    out: list[Rule] = []
    for rule in rules:
        names = _strings(rule, "resourceNames")
        if rule.get("nonResourceURLs") or len(names) > 1:
            out.append(rule)
            continue
        key = (rule["apiGroups"][0], rule["resources"][0], names[0] if names else None)
        if key in simple:
            simple[key]["verbs"] = simple[key]["verbs"] + rule["verbs"]
        else:
            simple[key] = {**rule, "verbs": list(rule["verbs"])}
    return out + list(simple.values())


def _go_quote_list(values: list[str]) -> str:
    return "[" + " ".join(json.dumps(v) for v in values) + "]"


def compact_string(rule: Rule) -> str:
    """``rbacv1helpers.CompactString``: ``{APIGroups:["ray.io"], Resources:["pods"], Verbs:["get"]}``."""
    parts = [
        f"{label}:{_go_quote_list(_strings(rule, key))}"
        for label, key in (
            ("APIGroups", "apiGroups"),
            ("Resources", "resources"),
            ("NonResourceURLs", "nonResourceURLs"),
            ("ResourceNames", "resourceNames"),
            ("Verbs", "verbs"),
        )
        if _strings(rule, key)
    ]
    return "{" + ", ".join(parts) + "}"


def escalation_message(user: UserInfo, missing: list[Rule], resolution_errors: list[str]) -> str:
    """``ConfirmNoEscalation``'s error text for rules the user does not hold."""
    lines = sorted({compact_string(r) for r in _compact(missing)})
    msg = (
        f'user "{user.name}" (groups={_go_quote_list(list(user.groups))}) is attempting to grant RBAC '
        "permissions not currently held:\n" + "\n".join(lines)
    )
    if resolution_errors:
        msg += f"; resolution errors: [{aggregate(resolution_errors)}]"
    return msg
