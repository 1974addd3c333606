"""``Impersonate-*`` headers: act as another user, if allowed to (apiserver's impersonation filter).

``kubectl --as=... --as-group=...`` and clients that test "what could X do" send
``Impersonate-User``, ``Impersonate-Group`` (repeatable), ``Impersonate-Uid`` and
``Impersonate-Extra-<key>``. Each one is authorized first, as the real requestor, with the verb
``impersonate`` on ``users``, ``groups`` or ``serviceaccounts`` (core group; a
``system:serviceaccount:NS:NAME`` user is the ServiceAccount in NS) or on ``uids`` and
``userextras/<key>`` (``authentication.k8s.io``); a refusal is the usual 403 naming that
resource. The request then runs as the impersonated user, whose groups gain
``system:authenticated`` (a ServiceAccount without explicit groups gets its fixed ones).
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote

from multidict import CIMultiDict, CIMultiDictProxy

from .authn import AUTHENTICATED, UserInfo
from .errors import StatusError
from .rbac import Decision
from .requestinfo import Attributes

__all__ = ["Headers", "impersonate"]

_SA_PREFIX = "system:serviceaccount:"
_EXTRA_PREFIX = "impersonate-extra-"


Headers = CIMultiDictProxy[str] | CIMultiDict[str]  # aiohttp's request.headers, or a test's


def impersonate(
    requestor: UserInfo,
    headers: Headers,
    decide: Callable[[Attributes], Decision],
    forbidden: Callable[[Attributes, str], StatusError],
) -> UserInfo:
    """The user the request acts as: ``requestor`` unless it asks, and may, to be someone else."""
    name = headers.get("Impersonate-User")
    groups_asked = headers.getall("Impersonate-Group", [])
    uid = headers.get("Impersonate-Uid")
    extra_keys = [k for k in headers if k.lower().startswith(_EXTRA_PREFIX)]
    if name is None:
        if groups_asked or uid is not None or extra_keys:
            raise StatusError.internal(
                "requested impersonation of groups, uid or extras without impersonating a user"
            )
        return requestor
    checks: list[Attributes] = []
    groups: list[str] = []
    if name.startswith(_SA_PREFIX) and name.count(":") == 3:
        namespace, sa_name = name[len(_SA_PREFIX) :].split(":")
        checks.append(
            Attributes(
                requestor, "impersonate", True, namespace=namespace, resource="serviceaccounts", name=sa_name
            )
        )
        if not groups_asked:
            groups = ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"]
    else:
        checks.append(Attributes(requestor, "impersonate", True, resource="users", name=name))
    for group in groups_asked:
        checks.append(Attributes(requestor, "impersonate", True, resource="groups", name=group))
        groups.append(group)
    extra: dict[str, list[str]] = {}
    for header in dict.fromkeys(extra_keys):
        key = unquote(header[len(_EXTRA_PREFIX) :]).lower()
        for value in headers.getall(header, []):
            checks.append(
                Attributes(
                    requestor,
                    "impersonate",
                    True,
                    api_group="authentication.k8s.io",
                    resource="userextras",
                    subresource=key,
                    name=value,
                )
            )
            extra.setdefault(key, []).append(value)
    if uid is not None:
        checks.append(
            Attributes(
                requestor, "impersonate", True, api_group="authentication.k8s.io", resource="uids", name=uid
            )
        )
    for attrs in checks:
        decision = decide(attrs)
        if not decision.allowed:
            raise forbidden(attrs, decision.reason)
    if name == "system:anonymous":
        if "system:unauthenticated" not in groups:
            groups.append("system:unauthenticated")
    elif AUTHENTICATED not in groups and "system:unauthenticated" not in groups:
        groups.append(AUTHENTICATED)
    return UserInfo(name, uid=uid or "", groups=tuple(groups), extra=extra)
