"""The built-in server's access control: authenticate, then authorize, before anything is routed.

Off by default (every request acts as the admin, as before). With ``rbac=True`` it works as
kube-apiserver's filter chain does with ``--authorization-mode=RBAC``: bearer token to user
(:mod:`.authn`), the URL to request attributes (:mod:`.requestinfo`), then ``system:masters``
is allowed everything (the privileged-group authorizer) and everyone else is judged by the RBAC
objects in storage (:mod:`.rbac`). A denial is a 403 whose ``Status`` has kube-apiserver's
exact wording, and is remembered in :attr:`AccessControl.denials` so tests can assert that a
controller running under some RBAC was never refused.

The user of the request being served is kept in a context variable: the RBAC kinds' hooks need
it for escalation checks deep inside ``ApiCore.create``, and each aiohttp request runs in its
own task, so the value never leaks between requests.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import structlog

from .authn import ADMIN, ADMIN_TOKEN, ANONYMOUS, ServiceAccountTokens, UserInfo, unauthorized
from .errors import StatusError
from .impersonation import Headers, Impersonation
from .rbac import Decision, authorize
from .requestinfo import Attributes, request_attributes

if TYPE_CHECKING:
    from .core import ApiCore

__all__ = ["AccessControl", "Denial", "StoragePolicy", "current_user", "forbidden"]

log = structlog.get_logger("kuberay_py.envtest.apiserver.access")

current_user: contextvars.ContextVar[UserInfo | None] = contextvars.ContextVar(
    "envtest_apiserver_user", default=None
)

_RBAC = "rbac.authorization.k8s.io"


@dataclass(frozen=True)
class Denial:
    """One refused request, in the terms of its 403 message."""

    user: str
    verb: str
    api_group: str
    resource: str  # resource/subresource, or "" for a non-resource path
    namespace: str
    name: str
    path: str


class StoragePolicy:
    """The RBAC authorizer's listers, reading the server's own storage."""

    def __init__(self, core: ApiCore) -> None:
        self.core = core

    def _all(self, plural: str, namespace: str | None) -> list[dict[str, Any]]:
        bucket = self.core.storage.buckets.get((_RBAC, plural))
        if bucket is None:
            return []
        return [bucket.objects[k] for k in bucket.iter_namespace(namespace)]

    def cluster_role_bindings(self) -> list[dict[str, Any]]:
        return self._all("clusterrolebindings", None)

    def role_bindings(self, namespace: str) -> list[dict[str, Any]]:
        return self._all("rolebindings", namespace)

    def role(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.core.storage.get((_RBAC, "roles"), namespace, name)

    def cluster_role(self, name: str) -> dict[str, Any] | None:
        return self.core.storage.get((_RBAC, "clusterroles"), "", name)


def _forbidden_message(attrs: Attributes) -> str:
    user = attrs.user.name
    if not attrs.resource_request:
        return f'User "{user}" cannot {attrs.verb} path "{attrs.path}"'
    where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    return (
        f'User "{user}" cannot {attrs.verb} resource "{attrs.combined_resource}" '
        f'in API group "{attrs.api_group}" {where}'
    )


def forbidden(attrs: Attributes, reason: str = "") -> StatusError:
    """``responsewriters.Forbidden``: ``apierrors.NewForbidden`` around the authorizer's verdict."""
    why = _forbidden_message(attrs) + (f": {reason}" if reason else "")
    group, resource, name = attrs.api_group, attrs.resource, attrs.name
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    if resource:
        details["kind"] = resource
    if not (group or resource):
        message = f"forbidden: {why}"
    else:
        qualified = f"{resource}.{group}" if group else resource
        message = f'{qualified} "{name}" is forbidden: {why}' if name else f"{qualified} is forbidden: {why}"
    return StatusError(403, "Forbidden", message, details)


class AccessControl:
    def __init__(self, core: ApiCore, *, rbac: bool = False) -> None:
        self.core = core
        self.rbac = rbac
        self.tokens = ServiceAccountTokens()
        self.policy = StoragePolicy(core)
        self.denials: list[Denial] = []
        # TokenRequest and the access reviews, keyed by (group, plural, subresource); the server
        # fills it in (reviews.virtual_creates) since the reviews ask this object for verdicts.
        self.virtual: dict[tuple[str, str, str | None], Callable[..., dict[str, Any]]] = {}
        self.impersonation = Impersonation(self.decide, self._refused)

    # -- authentication -----------------------------------------------------------------------------

    def _lookup_service_account(self, namespace: str, name: str) -> str | None:
        sa = self.core.storage.get(("", "serviceaccounts"), namespace, name)
        return None if sa is None else str(sa["metadata"].get("uid", ""))

    def now(self) -> int:
        return int(self.core.clock.utcnow().timestamp())

    def authenticate_token(self, token: str) -> UserInfo | None:
        if token == ADMIN_TOKEN:
            return ADMIN
        return self.tokens.authenticate(token, self.now(), self._lookup_service_account)

    def authenticate(self, authorization: str | None) -> UserInfo:
        """The request's user; anonymous without credentials, 401 for a bearer token that is not good."""
        if not authorization:
            return ANONYMOUS
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise unauthorized()
        user = self.authenticate_token(token.strip())
        if user is None:
            raise unauthorized()
        return user

    # -- authorization ------------------------------------------------------------------------------

    def decide(self, attrs: Attributes) -> Decision:
        if not self.rbac or attrs.user.superuser:
            return Decision(True)
        return authorize(self.policy, attrs)

    def check(self, method: str, path: str, query: Mapping[str, str], headers: Headers) -> UserInfo:
        """Authenticate, impersonate and authorize one request (the filter chain); raises 401/403."""
        authorization = headers.get("Authorization")
        if not self.rbac:
            # Every request is the admin, whatever it carries; a ServiceAccount token or an
            # impersonation still says who it is (SelfSubjectReview).
            try:
                requestor = self.authenticate(authorization)
            except StatusError:
                requestor = ADMIN
            requestor = ADMIN if requestor is ANONYMOUS else requestor
        else:
            requestor = self.authenticate(authorization)
        # Impersonation is authorized against the request's own attributes (constrained
        # impersonation asks "may the requestor do this verb while impersonating?").
        attrs = request_attributes(requestor, method, path, query)
        user = self.impersonation.impersonate(attrs, headers)
        current_user.set(user)
        if not self.rbac:
            return user
        attrs = replace(attrs, user=user)
        decision = self.decide(attrs)
        if not decision.allowed:
            raise self._refused(attrs, decision.reason)
        return user

    def _refused(self, attrs: Attributes, reason: str) -> StatusError:
        """Remember a denial and build its 403."""
        self.denials.append(
            Denial(
                attrs.user.name,
                attrs.verb,
                attrs.api_group,
                attrs.combined_resource,
                attrs.namespace,
                attrs.name,
                attrs.path,
            )
        )
        log.info("apiserver.forbidden", user=attrs.user.name, verb=attrs.verb, path=attrs.path, reason=reason)
        return forbidden(attrs, reason)

    def denials_for(self, user: str) -> list[Denial]:
        return [d for d in self.denials if d.user == user]
