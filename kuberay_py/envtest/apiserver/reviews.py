"""Create-only resources that answer a question instead of storing an object.

``TokenRequest`` (``serviceaccounts/token``) mints a ServiceAccount token; the access reviews of
``authorization.k8s.io/v1`` ask the authorizer ("may I / may they do X?", "what may I do here?");
``TokenReview`` and ``SelfSubjectReview`` (``authentication.k8s.io/v1``) ask the authenticator.
kube-apiserver answers them all with 201 and the request object plus a ``status``; nothing is
persisted, and every other verb on them is 405.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from .authn import ANONYMOUS, UserInfo
from .errors import StatusError
from .meta import format_time
from .rbac import aggregate, rules_for
from .registry import ResourceType
from .requestinfo import Attributes
from .validation import invalid, required

if TYPE_CHECKING:
    from .access import AccessControl

__all__ = ["REVIEW_TYPES", "VirtualCreate", "virtual_creates"]

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

# (namespace from the URL, name from the URL, the request body, the requesting user) -> response
VirtualCreate = Callable[[str | None, str | None, Any, UserInfo], dict[str, Any]]

_MIN_EXPIRATION = 600
_MAX_EXPIRATION = 1 << 32
_DEFAULT_EXPIRATION = 3600


def _body(body: Any, kind: str, api_version: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise StatusError.bad_request(f"the object provided is unrecognized (must be of type {kind})")
    if body.get("kind") not in (None, "", kind):
        raise StatusError.bad_request(
            f"the object provided is unrecognized (must be of type {kind}): {body.get('kind')} in version "
            f'"{body.get("apiVersion")}" cannot be handled as a {kind}'
        )
    meta = body.get("metadata")
    spec = body.get("spec")
    meta = meta if isinstance(meta, dict) else {}
    spec = spec if isinstance(spec, dict) else {}
    # The field order of the Go type: TypeMeta, ObjectMeta, spec, status.
    return {
        "kind": kind,
        "apiVersion": api_version,
        "metadata": {**meta, "creationTimestamp": None},
        "spec": spec,
    }


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
    core = access.core

    def access_status(attrs: Attributes) -> dict[str, Any]:
        decision = access.decide(attrs)
        status: dict[str, Any] = {"allowed": decision.allowed}
        if decision.reason:
            status["reason"] = decision.reason
        return status

    def self_access_review(ns: str | None, name: str | None, body: Any, user: UserInfo) -> dict[str, Any]:
        out = _body(body, "SelfSubjectAccessReview", f"{_AUTHZ}/v1")
        out["status"] = access_status(_review_attributes(user, out["spec"], "SelfSubjectAccessReview"))
        return out

    def subject_access_review(kind: str) -> VirtualCreate:
        def review(ns: str | None, name: str | None, body: Any, user: UserInfo) -> dict[str, Any]:
            out = _body(body, kind, f"{_AUTHZ}/v1")
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
        out = _body(body, "SelfSubjectRulesReview", f"{_AUTHZ}/v1")
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
        out = _body(body, "SelfSubjectReview", f"{_AUTHN}/v1")
        out.pop("spec", None)
        out["status"] = {"userInfo": _user_doc(user)}
        return out

    def token_review(ns: str | None, name: str | None, body: Any, user: UserInfo) -> dict[str, Any]:
        out = _body(body, "TokenReview", f"{_AUTHN}/v1")
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

    def token_request(ns: str | None, name: str | None, body: Any, user: UserInfo) -> dict[str, Any]:
        assert ns is not None and name is not None
        sa_rt = core.registry.get("", "v1", "serviceaccounts")
        assert sa_rt is not None
        sa = core.get(sa_rt, ns, name)
        out = _body(body, "TokenRequest", f"{_AUTHN}/v1")
        meta = out["metadata"]
        if meta.get("namespace") not in (None, "", ns):
            raise StatusError.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["name"], meta["namespace"] = meta.get("name") or name, ns
        spec = out["spec"]
        seconds = spec.get("expirationSeconds")
        seconds = _DEFAULT_EXPIRATION if seconds is None else seconds
        causes = []
        if not isinstance(seconds, int) or seconds < _MIN_EXPIRATION:
            causes.append(
                invalid("spec.expirationSeconds", seconds, "may not specify a duration less than 10 minutes")
            )
        elif seconds > _MAX_EXPIRATION:
            causes.append(
                invalid(
                    "spec.expirationSeconds", seconds, "may not specify a duration larger than 2^32 seconds"
                )
            )
        if causes:
            raise StatusError.invalid(_AUTHN, "TokenRequest", meta["name"], causes)
        audiences = [str(a) for a in spec.get("audiences") or []] or list(access.tokens.audiences)
        bound = spec.get("boundObjectRef")
        bound_obj = None
        if isinstance(bound, dict) and bound.get("kind"):
            plural = {"Pod": "pods", "Secret": "secrets"}.get(str(bound["kind"]))
            if plural is None:
                raise StatusError.bad_request(f"cannot bind token to object of type {bound['kind']}")
            rt = core.registry.get("", "v1", plural)
            assert rt is not None
            target = core.get(rt, ns, str(bound.get("name") or ""))
            uid = target["metadata"]["uid"]
            if bound.get("uid") and bound["uid"] != uid:
                raise StatusError.conflict(
                    "",
                    plural,
                    str(bound.get("name")),
                    f"the UID in the bound object reference ({bound['uid']}) "
                    "does not match the UID in record. The object might have been deleted and then recreated",
                )
            bound_obj = {"kind": bound["kind"], "name": bound["name"], "uid": uid}
        now = access.now()
        token = access.tokens.issue(
            ns,
            name,
            str(sa["metadata"]["uid"]),
            audiences=audiences,
            now=now,
            expiration_seconds=seconds,
            bound=bound_obj,
        )
        spec["audiences"], spec["expirationSeconds"] = audiences, seconds
        spec.setdefault("boundObjectRef", None)
        expires = datetime.fromtimestamp(now + seconds, UTC)
        out["status"] = {"token": token, "expirationTimestamp": format_time(expires)}
        return out

    return {
        ("", "serviceaccounts", "token"): token_request,
        (_AUTHN, "tokenreviews", None): token_review,
        (_AUTHN, "selfsubjectreviews", None): self_subject_review,
        (_AUTHZ, "selfsubjectaccessreviews", None): self_access_review,
        (_AUTHZ, "subjectaccessreviews", None): subject_access_review("SubjectAccessReview"),
        (_AUTHZ, "localsubjectaccessreviews", None): subject_access_review("LocalSubjectAccessReview"),
        (_AUTHZ, "selfsubjectrulesreviews", None): self_rules_review,
    }
