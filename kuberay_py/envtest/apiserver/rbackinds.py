"""Roles, ClusterRoles and their bindings: validation, and no granting of what one does not hold.

Validation follows ``pkg/apis/rbac/validation`` (a rule needs verbs; a resource rule needs API
groups and resources; a namespaced Role has no non-resource URLs; a binding's ``roleRef`` names a
Role or ClusterRole of ``rbac.authorization.k8s.io`` and never changes). With RBAC on, creating or
changing one also goes through the escalation check of ``pkg/registry/rbac/*/policybased``: the
requesting user must hold every permission a Role grants (or be allowed ``escalate``), and every
permission of the role a binding points at (or be allowed ``bind`` on it). This is what refuses
an operator that creates the Ray autoscaler's Role with rights its own ServiceAccount lacks.

Setting a ClusterRole's ``aggregationRule`` takes cluster-admin rights, as upstream. The server
stores the rule and never fills in the role's ``rules``: like kube-apiserver, it leaves that to
kube-controller-manager's clusterrole-aggregation controller, which the cluster simulator runs
(:mod:`kuberay_py.envtest.sim.clusterroles`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .access import current_user
from .errors import Cause, StatusError
from .kinds import NoHooks
from .meta import clone
from .rbac import covers, escalation_message, role_reference_rules, rules_for
from .registry import ResourceType
from .requestinfo import Attributes
from .validation import field_cause, invalid, not_supported, required

if TYPE_CHECKING:
    from .access import AccessControl
    from .core import ApiCore, Obj

__all__ = ["RbacHooks"]

_GROUP = "rbac.authorization.k8s.io"
_GC_FIELDS = ("ownerReferences", "finalizers", "resourceVersion", "managedFields", "generation")
_FULL_AUTHORITY = [
    {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
    {"nonResourceURLs": ["*"], "verbs": ["*"]},
]


def _rule_problems(rules: Any, namespaced: bool) -> list[Cause]:
    causes: list[Cause] = []
    for i, rule in enumerate(rules if isinstance(rules, list) else []):
        path = f"rules[{i}]"
        rule = rule if isinstance(rule, dict) else {}
        if not rule.get("verbs"):
            causes.append(required(f"{path}.verbs", "verbs must contain at least one value"))
        urls = rule.get("nonResourceURLs") or []
        if urls:
            if namespaced:
                causes.append(
                    invalid(
                        f"{path}.nonResourceURLs", urls, "namespaced rules cannot apply to non-resource URLs"
                    )
                )
            if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
                causes.append(
                    invalid(
                        f"{path}.nonResourceURLs",
                        urls,
                        "rules cannot apply to both regular resources and non-resource URLs",
                    )
                )
            continue
        if not rule.get("apiGroups"):
            causes.append(required(f"{path}.apiGroups", "resource rules must supply at least one api group"))
        if not rule.get("resources"):
            causes.append(required(f"{path}.resources", "resource rules must supply at least one resource"))
    return causes


def _default_binding(obj: Obj) -> None:
    """rbac/v1 defaults: ``roleRef.apiGroup``, and a User's or Group's ``apiGroup``."""
    ref = obj.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = _GROUP
    for subject in obj.get("subjects") or []:
        if (
            isinstance(subject, dict)
            and not subject.get("apiGroup")
            and subject.get("kind") in ("User", "Group")
        ):
            subject["apiGroup"] = _GROUP


def _binding_problems(obj: Obj, cluster: bool) -> list[Cause]:
    causes: list[Cause] = []
    ref = obj.get("roleRef")
    ref = ref if isinstance(ref, dict) else {}
    kinds = ("ClusterRole",) if cluster else ("Role", "ClusterRole")
    if ref.get("apiGroup") != _GROUP:
        causes.append(not_supported("roleRef.apiGroup", ref.get("apiGroup", ""), (_GROUP,)))
    if ref.get("kind") not in kinds:
        causes.append(not_supported("roleRef.kind", ref.get("kind", ""), kinds))
    if not ref.get("name"):
        causes.append(required("roleRef.name"))
    for i, subject in enumerate(obj.get("subjects") or []):
        subject = subject if isinstance(subject, dict) else {}
        path = f"subjects[{i}]"
        if not subject.get("name"):
            causes.append(required(f"{path}.name"))
        kind, group = subject.get("kind"), subject.get("apiGroup") or ""
        if kind not in ("ServiceAccount", "User", "Group"):
            causes.append(not_supported(f"{path}.kind", kind or "", ("ServiceAccount", "User", "Group")))
        elif kind == "ServiceAccount":
            if group:
                causes.append(not_supported(f"{path}.apiGroup", group, ("",)))
            if cluster and not subject.get("namespace"):
                causes.append(required(f"{path}.namespace"))
        elif group != _GROUP:
            causes.append(not_supported(f"{path}.apiGroup", group, (_GROUP,)))
    return causes


def _only_gc_fields_changed(old: Obj, new: Obj) -> bool:
    def strip(o: Obj) -> Obj:
        c: Obj = clone(o)
        meta = c.get("metadata") or {}
        for k in _GC_FIELDS:
            meta.pop(k, None)
        return c

    return strip(old) == strip(new)


class RbacHooks(NoHooks):
    def __init__(self, access: AccessControl) -> None:
        self.access = access

    # -- validation -----------------------------------------------------------------------------------

    @staticmethod
    def _problems(rt: ResourceType, obj: Obj) -> list[Cause]:
        if rt.plural in ("roles", "clusterroles"):
            if not obj.get("rules"):
                # rbac/v1's ``rules`` has no omitempty and etcd's protobuf has no empty list: a
                # role without rules (an aggregate not yet filled in) reads back ``"rules": null``.
                obj["rules"] = None
            return _rule_problems(obj.get("rules"), rt.plural == "roles")
        if isinstance(obj.get("subjects"), dict):
            return [invalid("subjects", "object", "must be a list")]
        _default_binding(obj)
        return _binding_problems(obj, rt.plural == "clusterrolebindings")

    def prepare_create(self, core: ApiCore, rt: ResourceType, obj: Obj) -> list[Cause]:
        causes = self._problems(rt, obj)
        if not causes:
            self._confirm_no_escalation(rt, obj)
            self._confirm_may_aggregate(rt, obj)
        return causes

    def prepare_update(
        self, core: ApiCore, rt: ResourceType, old: Obj, new: Obj, subresource: str | None
    ) -> list[Cause]:
        causes = self._problems(rt, new)
        if rt.plural.endswith("bindings") and old.get("roleRef") != new.get("roleRef"):
            ref = new.get("roleRef") or {}  # upstream prints the new value
            value = (
                f'rbac.RoleRef{{APIGroup:"{ref.get("apiGroup", "")}", Kind:"{ref.get("kind", "")}", '
                f'Name:"{ref.get("name", "")}"}}'
            )
            causes.append(
                field_cause("FieldValueInvalid", "roleRef", f"Invalid value: {value}: cannot change roleRef")
            )
        if not causes and not _only_gc_fields_changed(old, new):
            self._confirm_no_escalation(rt, new)
            if new.get("aggregationRule") != old.get("aggregationRule"):
                self._confirm_may_aggregate(rt, new)
        return causes

    # -- escalation -----------------------------------------------------------------------------------

    def _confirm_may_aggregate(self, rt: ResourceType, obj: Obj) -> None:
        user = current_user.get()
        if rt.plural != "clusterroles" or not obj.get("aggregationRule"):
            return
        if not self.access.rbac or user is None or user.superuser:
            return
        held, _errors = rules_for(self.access.policy, user, "")
        if not covers(held, _FULL_AUTHORITY)[0]:
            name = str((obj.get("metadata") or {}).get("name") or "")
            raise StatusError.forbidden(
                _GROUP, rt.plural, name, "must have cluster-admin privileges to use the aggregationRule"
            )

    def _confirm_no_escalation(self, rt: ResourceType, obj: Obj) -> None:
        access = self.access
        user = current_user.get()
        if not access.rbac or user is None or user.superuser:
            return
        meta = obj.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        if rt.plural in ("roles", "clusterroles"):
            escalate = Attributes(
                user, "escalate", True, namespace=namespace, api_group=_GROUP, resource=rt.plural
            )
            if access.decide(escalate).allowed:
                return
            wanted = [r for r in obj.get("rules") or [] if isinstance(r, dict)]
        else:
            ref = obj.get("roleRef") or {}
            bind = Attributes(
                user,
                "bind",
                True,
                namespace=namespace,
                api_group=str(ref.get("apiGroup") or ""),
                resource="clusterroles" if ref.get("kind") == "ClusterRole" else "roles",
                name=str(ref.get("name") or ""),
            )
            if access.decide(bind).allowed:
                return
            wanted, error = role_reference_rules(access.policy, ref, namespace)
            if error is not None:
                plural = "clusterroles" if ref.get("kind") == "ClusterRole" else "roles"
                raise StatusError.not_found(_GROUP, plural, str(ref.get("name") or ""))
        held, errors = rules_for(access.policy, user, namespace)
        ok, missing = covers(held, wanted)
        if not ok:
            raise StatusError.forbidden(_GROUP, rt.plural, name, escalation_message(user, missing, errors))
