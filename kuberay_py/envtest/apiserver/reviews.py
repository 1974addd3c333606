"""Create-only resources that answer a question about access instead of storing an object.

The access reviews of ``authorization.k8s.io/v1`` ask the authorizer ("may I / may they do X?",
"what may I do here?"); ``TokenReview`` and ``SelfSubjectReview`` (``authentication.k8s.io/v1``)
ask the authenticator. (``TokenRequest``, which mints a token, is :mod:`.tokenrequest`.)
kube-apiserver answers them all with 201 and the request object plus a ``status``; nothing is
persisted, and every other verb on them is 405.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .authn import ANONYMOUS, UserInfo
from .errors import StatusError
from .rbac import aggregate, rules_for
from .registry import ResourceType
from .requestinfo import Attributes
from .validation import invalid, required
from .virtual import VirtualCreate, request_object

if TYPE_CHECKING:
    from .access import AccessControl

__all__ = ["REVIEW_TYPES", "virtual_creates"]

_AUTHZ = "authorization.k8s.io"
_AUTHN = "authentication.k8s.io"
_CREATE = ("create",)

REVIEW_TYPES: tuple[ResourceType, ...] = (
    ResourceType(_AUTHN, "v1", "TokenReview", "tokenreviews", namespaced=False, verbs=_CREATE),
    ResourceType(_AUTHN, "v1", "SelfSubjectReview", "selfsubjectreviews", namespaced=False, verbs=_CREATE),
    ResourceType(_AUTHZ, "v1", "LocalSubjectAccessReview", "localsubjectaccessreviews", verbs=_CREATE),
    ResourceType(
        _AUTHZ, "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews", namespaced=False, verbs=_CREATE
    ),
    ResourceType(
        _AUTHZ, "v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews", namespaced=False, verbs=_CREATE
    ),
    ResourceType(
        _AUTHZ, "v1", "SubjectAccessReview", "subjectaccessreviews", namespaced=False, verbs=_CREATE
    ),
)


def _user_doc(user: UserInfo) -> dict[str, Any]:
    doc: dict[str, Any] = {"username": user.name}
    if user.uid:
        doc["uid"] = user.uid
    doc["groups"] = list(user.groups)
    if user.extra:
        doc["extra"] = user.extra
    return doc


def _review_attributes(user: UserInfo, spec: dict[str, Any], kind: str) -> Attributes:
    res, non_res = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if (res is None) == (non_res is None):
        field = "nonResourceAttributes" if res is not None else "resourceAttributes"
        why = (
            "cannot be specified in combination with resourceAttributes"
            if res is not None
            else "exactly one of nonResourceAttributes or resourceAttributes must be specified"
        )
        raise StatusError.invalid(_AUTHZ, kind, "", [invalid(f"spec.{field}", "null", why)])
    if isinstance(non_res, dict):
        return Attributes(user, str(non_res.get("verb") or ""), False, path=str(non_res.get("path") or ""))
    r = res if isinstance(res, dict) else {}
    return Attributes(
        user,
        str(r.get("verb") or ""),
        True,
        namespace=str(r.get("namespace") or ""),
        api_group=str(r.get("group") or ""),
        api_version=str(r.get("version") or ""),
        resource=str(r.get("resource") or ""),
        subresource=str(r.get("subresource") or ""),
        name=str(r.get("name") or ""),
    )


def virtual_creates(access: AccessControl) -> dict[tuple[str, str, str | None], VirtualCreate]:
    """The handlers, keyed by (group, plural, subresource)."""

    def access_status(attrs: Attributes) -> dict[str, Any]:
        decision = access.decide(attrs)
        status: dict[str, Any] = {"allowed": decision.allowed}
        if decision.reason:
            status["reason"] = decision.reason
        return status

    def self_access_review(ns: str | None, name: str | None, body: Any, user: UserInfo) -> dict[str, Any]:
        out = request_object(body, "SelfSubjectAccessReview", f"{_AUTHZ}/v1")
        out["status"] = access_status(_review_attributes(user, out["spec"], "SelfSubjectAccessReview"))
        return out

    def subject_access_review(kind: str) -> VirtualCreate:
        def review(ns: str | None, name: str | None, body: Any, user: UserInfo) -> dict[str, Any]:
            out = request_object(body, kind, f"{_AUTHZ}/v1")
            spec = out["spec"]
            if not spec.get("user") and not spec.get("groups"):
                raise StatusError.invalid(
                    _AUTHZ,
                    kind,
                    "",
                    [required("spec.user", "at least one of user or group must be specified")],
                )
            subject = UserInfo(
                str(spec.get("user") or ""),
                uid=str(spec.get("uid") or ""),
                groups=tuple(str(g) for g in spec.get("groups") or []),
            )
            attrs = _review_attributes(subject, spec, kind)
            if ns is not None and attrs.namespace != ns:
                raise StatusError.invalid(
                    _AUTHZ,
                    kind,
                    "",
                    [
                        invalid(
                            "spec.resourceAttributes.namespace",
                            attrs.namespace,
                            "must match metadata.namespace",
                        )
                    ],
                )
            out["status"] = access_status(attrs)
            return out

        return review

    def self_rules_review(ns: str | None, name: str | None, body: Any, user: UserInfo) -> dict[str, Any]:
        out = request_object(body, "SelfSubjectRulesReview", f"{_AUTHZ}/v1")
        namespace = str(out["spec"].get("namespace") or "")
        if access.rbac and not user.superuser:
            rules, errors = rules_for(access.policy, user, namespace)
        else:
            rules = [
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["*"]},
            ]
            errors = []
        resource_rules, non_resource_rules = [], []
        for rule in rules:
            if rule.get("nonResourceURLs"):
                non_resource_rules.append(
                    {"verbs": rule.get("verbs") or [], "nonResourceURLs": rule["nonResourceURLs"]}
                )
            else:
                entry = {
                    k: rule[k] for k in ("verbs", "apiGroups", "resources", "resourceNames") if rule.get(k)
                }
                entry.setdefault("verbs", [])
                resource_rules.append(entry)
        status: dict[str, Any] = {
            "resourceRules": resource_rules,
            "nonResourceRules": non_resource_rules,
            "incomplete": bool(errors),
        }
        if errors:
            status["evaluationError"] = aggregate(errors)
        out["status"] = status
        return out

    def self_subject_review(ns: str | None, name: str | None, body: Any, user: UserInfo) -> dict[str, Any]:
        out = request_object(body, "SelfSubjectReview", f"{_AUTHN}/v1")
        out.pop("spec", None)
        out["status"] = {"userInfo": _user_doc(user)}
        return out

    def token_review(ns: str | None, name: str | None, body: Any, user: UserInfo) -> dict[str, Any]:
        out = request_object(body, "TokenReview", f"{_AUTHN}/v1")
        token = str(out["spec"].get("token") or "")
        if not token:
            raise StatusError.invalid(_AUTHN, "TokenReview", "", [required("spec.token", "")])
        reviewed = access.authenticate_token(token)
        if reviewed is None or reviewed is ANONYMOUS:
            out["status"] = {"user": {}}
        else:
            out["status"] = {
                "authenticated": True,
                "user": _user_doc(reviewed),
                "audiences": list(out["spec"].get("audiences") or access.tokens.audiences),
            }
        return out

    return {
        (_AUTHN, "tokenreviews", None): token_review,
        (_AUTHN, "selfsubjectreviews", None): self_subject_review,
        (_AUTHZ, "selfsubjectaccessreviews", None): self_access_review,
        (_AUTHZ, "subjectaccessreviews", None): subject_access_review("SubjectAccessReview"),
        (_AUTHZ, "localsubjectaccessreviews", None): subject_access_review("LocalSubjectAccessReview"),
        (_AUTHZ, "selfsubjectrulesreviews", None): self_rules_review,
    }
