"""``Impersonate-*`` headers: act as another user, if allowed to (kube-apiserver 1.36's impersonation filter).

``kubectl --as=... --as-group=...`` and clients that test "what could X do" send
``Impersonate-User``, ``Impersonate-Group`` (repeatable), ``Impersonate-Uid`` and
``Impersonate-Extra-<key>``. Kubernetes 1.36 has constrained impersonation (KEP-5284, the
``impersonation`` package of ``k8s.io/apiserver``): the filter tries five modes in order and the
first that succeeds decides who the request acts as.

* ``associated-node`` (a ServiceAccount impersonating the Node its token is bound to),
  ``arbitrary-node`` (``system:node:<name>``), ``serviceaccount`` (``system:serviceaccount:NS:N``)
  take a user name alone; ``user-info`` takes any other user, with groups, uid and extras. A mode
  first asks ``impersonate-on:<mode>:<verb>`` on the request itself (may the requestor do *this*
  while impersonating?), then ``impersonate:<mode>`` on ``nodes`` / ``serviceaccounts`` / ``users``,
  ``groups``, ``uids`` and ``userextras/<key>``, all in ``authentication.k8s.io``. A node is in
  ``system:nodes`` only; ``system:masters``, the empty group and malformed extras are refused.
* ``legacy`` is the impersonation of every earlier release: verb ``impersonate`` on ``users``,
  ``serviceaccounts`` and ``groups`` of the core group, ``uids`` and ``userextras/<key>`` of
  ``authentication.k8s.io``.

When no mode succeeds the answer is the first refusal met, so a ServiceAccount without any
impersonation rights impersonating ``bob`` is told it ``cannot impersonate-on:user-info:get``. As
upstream, the mode that last succeeded for a requestor is tried first (its refusal then comes
first). The impersonated user's groups gain ``system:authenticated`` (``system:unauthenticated``
for ``system:anonymous``); a ServiceAccount without explicit groups gets its fixed ones.

Not modelled: upstream's 10-second caches of successful checks (a grant revoked within those
seconds is seen at once here).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from urllib.parse import unquote

from multidict import CIMultiDict, CIMultiDictProxy

from .authn import AUTHENTICATED, UserInfo
from .errors import StatusError
from .rbac import Decision
from .requestinfo import Attributes
from .validation import name_problems

__all__ = ["Headers", "Impersonation"]

_SA_PREFIX = "system:serviceaccount:"
_NODE_PREFIX = "system:node:"
_NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"
_EXTRA_PREFIX = "impersonate-extra-"
_AUTHN = "authentication.k8s.io"
_UNAUTHENTICATED = "system:unauthenticated"
_ANONYMOUS = "system:anonymous"
_MASTERS = "system:masters"
_MANY_CHECKS = 4  # upstream's manyAuthorizationChecksInLoop: try one wildcard check first
_DOMAIN_PREFIXED = re.compile(r"^([^/]+)/(.+)$")

Headers = CIMultiDictProxy[str] | CIMultiDict[str]  # aiohttp's request.headers, or a test's
Decide = Callable[[Attributes], Decision]
Refuse = Callable[[Attributes, str], StatusError]


@dataclass
class _Wanted:
    """The user the headers ask for (``user.DefaultInfo`` before any defaulting)."""

    name: str
    uid: str = ""
    groups: list[str] = field(default_factory=list)
    extra: dict[str, list[str]] = field(default_factory=dict)

    def only_name(self) -> bool:
        return not (self.uid or self.groups or self.extra)

    def go_syntax(self) -> str:
        """``fmt.Sprintf("%#v", wantedUser)``, as the 400 for a missing user name prints it."""
        groups = (
            "[]string{" + ", ".join(_go_quote(g) for g in self.groups) + "}"
            if self.groups
            else "[]string(nil)"
        )
        extra = (
            "map[string][]string{"
            + ", ".join(
                f"{_go_quote(k)}:[]string{{{', '.join(_go_quote(v) for v in self.extra[k])}}}"
                for k in sorted(self.extra)
            )
            + "}"
            if self.extra
            else "map[string][]string(nil)"
        )
        return (
            f"&user.DefaultInfo{{Name:{_go_quote(self.name)}, UID:{_go_quote(self.uid)}, "
            f"Groups:{groups}, Extra:{extra}}}"
        )


def _go_quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _wanted_user(headers: Headers) -> _Wanted | None:
    """``processImpersonationHeaders``: ``None`` when the request impersonates no one."""
    wanted = _Wanted(headers.get("Impersonate-User") or "", headers.get("Impersonate-Uid") or "")
    wanted.groups = list(headers.getall("Impersonate-Group", []))
    for header in dict.fromkeys(k.lower() for k in headers if k.lower().startswith(_EXTRA_PREFIX)):
        key = unquote(header[len(_EXTRA_PREFIX) :])
        wanted.extra.setdefault(key, []).extend(headers.getall(header, []))
    if not wanted.name:
        if wanted.uid or wanted.groups or wanted.extra:
            raise StatusError.bad_request(f"requested {wanted.go_syntax()} without impersonating a user name")
        return None
    return wanted


def _service_account(name: str) -> tuple[str, str] | None:
    """``serviceaccount.SplitUsername``: the namespace and name of a valid ServiceAccount user name."""
    if not name.startswith(_SA_PREFIX):
        return None
    parts = name[len(_SA_PREFIX) :].split(":")
    if len(parts) != 2 or name_problems(parts[0], "label") or name_problems(parts[1], "subdomain"):
        return None
    return parts[0], parts[1]


def _node(name: str) -> str | None:
    """The node of a ``system:node:<name>`` user name whose name is a valid DNS subdomain."""
    if not name.startswith(_NODE_PREFIX):
        return None
    node = name[len(_NODE_PREFIX) :]
    return None if name_problems(node, "subdomain") else node


def _extra_problem(extra: dict[str, list[str]]) -> str:
    """``validateExtra``: why constrained impersonation refuses these extras, or ``""``."""
    for key, values in extra.items():
        if not key:
            return "impersonating the empty string key in extra is not allowed"
        match = _DOMAIN_PREFIXED.match(key)
        if match is None:
            return (
                "impersonating an invalid key in extra is not allowed: extra.key: Invalid value: "
                f'{_go_quote(key)}: must be a domain-prefixed path (such as "acme.io/foo")'
            )
        host_problems = name_problems(match.group(1), "subdomain")
        if host_problems:
            return (
                "impersonating an invalid key in extra is not allowed: extra.key: Invalid value: "
                f"{_go_quote(match.group(1))}: {host_problems[0]}"
            )
        if not values:
            return "impersonating empty values in extra is not allowed"
        if "" in values:
            return "impersonating the empty string value in extra is not allowed"
    return ""


class _Refused(Exception):
    """One authorization check said no; only the one the filter answers with becomes a 403."""

    def __init__(self, attrs: Attributes, reason: str) -> None:
        super().__init__(reason)
        self.attrs = attrs
        self.reason = reason


@dataclass(frozen=True)
class _Mode:
    """One impersonation mode: ``name`` is ``""`` for legacy impersonation."""

    name: str
    applies: Callable[[_Wanted, UserInfo], bool]

    @property
    def verb(self) -> str:
        return f"impersonate:{self.name}" if self.name else "impersonate"

    @property
    def user_group(self) -> str:
        """The API group of ``users``, ``groups`` and ``serviceaccounts`` checks."""
        return _AUTHN if self.name else ""


def _associated_node(wanted: _Wanted, requestor: UserInfo) -> bool:
    node = _node(wanted.name)
    return (
        wanted.only_name()
        and node is not None
        and _service_account(requestor.name) is not None
        and requestor.extra.get(_NODE_NAME_EXTRA) == [node]
    )


_MODES = (
    _Mode("associated-node", _associated_node),
    _Mode("arbitrary-node", lambda w, _r: w.only_name() and _node(w.name) is not None),
    _Mode("serviceaccount", lambda w, _r: w.only_name() and _service_account(w.name) is not None),
    _Mode("user-info", lambda w, _r: _node(w.name) is None and _service_account(w.name) is None),
    _Mode("", lambda _w, _r: True),
)


class Impersonation:
    """The impersonation filter over one authorizer; remembers each requestor's last good mode."""

    def __init__(self, decide: Decide, refuse: Refuse) -> None:
        self._decide = decide
        self._refuse = refuse
        self._last_mode: dict[str, int] = {}

    def impersonate(self, request: Attributes, headers: Headers) -> UserInfo:
        """The user ``request`` acts as: its own unless it asks, and may, to be someone else."""
        wanted = _wanted_user(headers)
        if wanted is None:
            return request.user
        requestor = request.user.name
        order = list(range(len(_MODES)))
        last = self._last_mode.get(requestor)
        if last is not None:
            order.remove(last)
            order.insert(0, last)
        first: _Refused | None = None
        for index in order:
            mode = _MODES[index]
            if not mode.applies(wanted, request.user):
                continue
            try:
                user = self._check(mode, wanted, request)
            except _Refused as refused:
                first = first or refused
                continue
            self._last_mode[requestor] = index
            return user
        assert first is not None  # legacy impersonation always applies
        raise self._refuse(first.attrs, first.reason)

    def _allow(self, attrs: Attributes) -> None:
        """``checkAuthorization``: a refusal is the 403 naming exactly these attributes."""
        decision = self._decide(attrs)
        if not decision.allowed:
            raise _Refused(attrs, decision.reason)

    def _check(self, mode: _Mode, wanted: _Wanted, request: Attributes) -> UserInfo:
        if mode.name:
            self._allow(replace(request, verb=f"impersonate-on:{mode.name}:{request.verb}"))
        groups = self._check_name(mode, wanted, request)
        if wanted.uid:
            self._allow(self._attrs(mode, request, _AUTHN, "uids", wanted.uid))
        self._check_groups(mode, wanted.groups, request)
        self._check_extra(mode, wanted.extra, request)
        if wanted.name == _ANONYMOUS:
            groups += [] if _UNAUTHENTICATED in groups else [_UNAUTHENTICATED]
        elif _UNAUTHENTICATED not in groups and AUTHENTICATED not in groups:
            groups.append(AUTHENTICATED)
        return UserInfo(wanted.name, uid=wanted.uid, groups=tuple(groups), extra=dict(wanted.extra))

    @staticmethod
    def _attrs(
        mode: _Mode, request: Attributes, group: str, resource: str, name: str, namespace: str = ""
    ) -> Attributes:
        return Attributes(
            request.user,
            mode.verb,
            True,
            namespace=namespace,
            api_group=group,
            api_version="v1",
            resource=resource,
            name=name,
        )

    def _check_name(self, mode: _Mode, wanted: _Wanted, request: Attributes) -> list[str]:
        """Authorize the user name; the groups the impersonated user starts with."""
        node = _node(wanted.name) if mode.name else None
        account = _service_account(wanted.name)
        if node is not None:
            # associated-node's check is valid for every node its ServiceAccount may be bound to
            name = "*" if mode.name == "associated-node" else node
            self._allow(self._attrs(mode, request, _AUTHN, "nodes", name))
            return ["system:nodes"]
        if account is not None:
            namespace, name = account
            self._allow(self._attrs(mode, request, mode.user_group, "serviceaccounts", name, namespace))
            if wanted.groups:
                return list(wanted.groups)
            return ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"]
        self._allow(self._attrs(mode, request, mode.user_group, "users", wanted.name))
        return list(wanted.groups)

    def _check_groups(self, mode: _Mode, groups: list[str], request: Attributes) -> None:
        if not groups:
            return
        if mode.name:
            if "" in groups:
                attrs = self._attrs(mode, request, _AUTHN, "groups", "")
                raise _Refused(attrs, "impersonating the empty string group is not allowed")
            if _MASTERS in groups:
                attrs = self._attrs(mode, request, _AUTHN, "groups", _MASTERS)
                raise _Refused(attrs, "impersonating the system:masters group is not allowed")
            wildcard = self._attrs(mode, request, _AUTHN, "groups", "*")
            if len(groups) >= _MANY_CHECKS and self._decide(wildcard).allowed:
                return
        for group in groups:
            self._allow(self._attrs(mode, request, mode.user_group, "groups", group))

    def _check_extra(self, mode: _Mode, extra: dict[str, list[str]], request: Attributes) -> None:
        if not extra:
            return
        if mode.name:
            problem = _extra_problem(extra)
            if problem:
                raise _Refused(self._attrs(mode, request, _AUTHN, "userextras", ""), problem)
            if sum(len(v) for v in extra.values()) >= _MANY_CHECKS or len(extra) >= _MANY_CHECKS:
                wildcard = replace(self._attrs(mode, request, _AUTHN, "userextras", "*"), subresource="*")
                if self._decide(wildcard).allowed:
                    return
        for key, values in extra.items():
            for value in values:
                attrs = replace(self._attrs(mode, request, _AUTHN, "userextras", value), subresource=key)
                self._allow(attrs)
