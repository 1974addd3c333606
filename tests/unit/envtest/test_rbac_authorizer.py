"""The built-in server's RBAC pieces, without HTTP: request attributes, rule matching, the
resolver's bindings and scoping, escalation checks, ServiceAccount tokens, impersonation and the
403 body."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from multidict import CIMultiDict

from kuberay_py.envtest.apiserver.access import forbidden
from kuberay_py.envtest.apiserver.authn import ServiceAccountTokens, UserInfo, service_account_user
from kuberay_py.envtest.apiserver.errors import StatusError
from kuberay_py.envtest.apiserver.impersonation import Impersonation
from kuberay_py.envtest.apiserver.rbac import (
    Decision,
    authorize,
    compact_string,
    covers,
    escalation_message,
    rule_allows,
    rules_for,
)
from kuberay_py.envtest.apiserver.requestinfo import Attributes, request_attributes

SA = service_account_user("ops", "op", "uid-1")
ALICE = UserInfo("alice", groups=("devs", "system:authenticated"))


def attrs(method: str, path: str, query: dict[str, str] | None = None, user: UserInfo = SA) -> Attributes:
    return request_attributes(user, method, path, query or {})


@pytest.mark.parametrize(
    ("method", "path", "query", "want"),
    [
        ("GET", "/api/v1/pods", {}, ("list", "", "pods", "", "", "")),
        ("GET", "/api/v1/namespaces/a/pods", {"watch": "true"}, ("watch", "", "pods", "", "a", "")),
        ("GET", "/api/v1/namespaces/a/pods", {"watch": "1"}, ("watch", "", "pods", "", "a", "")),
        ("GET", "/api/v1/namespaces/a/pods", {"watch": "false"}, ("list", "", "pods", "", "a", "")),
        (
            "GET",
            "/api/v1/namespaces/a/pods",
            {"fieldSelector": "metadata.name=p1", "watch": "true"},
            ("watch", "", "pods", "", "a", "p1"),
        ),
        ("GET", "/api/v1/namespaces/a/pods/p1", {}, ("get", "", "pods", "", "a", "p1")),
        (
            "PUT",
            "/apis/ray.io/v1/namespaces/a/rayclusters/c/status",
            {},
            ("update", "ray.io", "rayclusters", "status", "a", "c"),
        ),
        (
            "PUT",
            "/apis/ray.io/v1/namespaces/a/rayclusters/c/finalizers",
            {},
            ("update", "ray.io", "rayclusters", "finalizers", "a", "c"),
        ),
        ("PATCH", "/apis/ray.io/v1/rayclusters/c", {}, ("patch", "ray.io", "rayclusters", "", "", "c")),
        ("DELETE", "/api/v1/namespaces/a/pods", {}, ("deletecollection", "", "pods", "", "a", "")),
        ("DELETE", "/api/v1/namespaces/a/pods/p", {}, ("delete", "", "pods", "", "a", "p")),
        (
            "POST",
            "/api/v1/namespaces/a/serviceaccounts/s/token",
            {},
            ("create", "", "serviceaccounts", "token", "a", "s"),
        ),
        ("POST", "/api/v1/namespaces/a/pods/p/binding", {}, ("create", "", "pods", "binding", "a", "p")),
        ("GET", "/api/v1/watch/namespaces/a/pods", {}, ("watch", "", "pods", "", "a", "")),
        ("GET", "/api/v1/namespaces/a/pods/p/proxy/x/y", {}, ("get", "", "pods", "proxy", "a", "p")),
        ("GET", "/api/v1/proxy/namespaces/a/pods/p/x", {}, ("proxy", "", "pods", "", "a", "p")),
        # A Namespace is in its own namespace; its status and finalize are its subresources.
        ("GET", "/api/v1/namespaces/a", {}, ("get", "", "namespaces", "", "a", "a")),
        ("PUT", "/api/v1/namespaces/a/finalize", {}, ("update", "", "namespaces", "finalize", "a", "a")),
        ("GET", "/api/v1/namespaces", {}, ("list", "", "namespaces", "", "", "")),
        (
            "POST",
            "/apis/coordination.k8s.io/v1/namespaces/a/leases",
            {"watch": "true"},
            ("create", "coordination.k8s.io", "leases", "", "a", ""),
        ),
    ],
)
def test_request_attributes(method: str, path: str, query: dict[str, str], want: tuple[str, ...]) -> None:
    a = attrs(method, path, query)
    assert a.resource_request
    assert (a.verb, a.api_group, a.resource, a.subresource, a.namespace, a.name) == want


@pytest.mark.parametrize(
    ("method", "path", "verb"),
    [
        ("GET", "/apis", "get"),
        ("GET", "/apis/ray.io", "get"),
        ("GET", "/healthz", "get"),
        ("GET", "/api/v1", "get"),
        ("POST", "/logs", "post"),
        ("GET", "/version", "get"),
    ],
)
def test_non_resource_requests(method: str, path: str, verb: str) -> None:
    a = attrs(method, path)
    assert not a.resource_request and a.verb == verb and a.path == path


def rule(
    groups: list[str], resources: list[str], verbs: list[str], names: list[str] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"apiGroups": groups, "resources": resources, "verbs": verbs}
    if names:
        out["resourceNames"] = names
    return out


def test_rule_matching() -> None:
    status = attrs("PUT", "/apis/ray.io/v1/namespaces/a/rayclusters/c/status")
    assert rule_allows(status, rule(["ray.io"], ["rayclusters/status"], ["update"]))
    assert rule_allows(status, rule(["ray.io"], ["*/status"], ["update"]))
    assert rule_allows(status, rule(["*"], ["*"], ["*"]))
    assert not rule_allows(status, rule(["ray.io"], ["rayclusters"], ["update"]))  # not the subresource
    assert not rule_allows(status, rule(["ray.io"], ["*/scale"], ["update"]))
    assert not rule_allows(
        status, rule([""], ["rayclusters/status"], ["update"])
    )  # "" is the core group only
    assert rule_allows(status, rule(["ray.io"], ["rayclusters/status"], ["update"], ["c"]))
    assert not rule_allows(status, rule(["ray.io"], ["rayclusters/status"], ["update"], ["other"]))
    listing = attrs("GET", "/apis/ray.io/v1/rayclusters")
    assert not rule_allows(
        listing, rule(["ray.io"], ["rayclusters"], ["list"], ["c"])
    )  # names never match a list
    health = attrs("GET", "/healthz/etcd")
    assert rule_allows(health, {"nonResourceURLs": ["/healthz/*"], "verbs": ["get"]})
    assert not rule_allows(health, {"nonResourceURLs": ["/healthz"], "verbs": ["get"]})
    assert not rule_allows(health, rule(["*"], ["*"], ["*"]))  # resource rules never cover paths


class Policy:
    def __init__(self, *objs: dict[str, Any]) -> None:
        self.objs = objs

    def _of(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        return [
            o
            for o in self.objs
            if o["kind"] == kind and (namespace is None or o["metadata"].get("namespace") == namespace)
        ]

    def cluster_role_bindings(self) -> list[dict[str, Any]]:
        return self._of("ClusterRoleBinding")

    def role_bindings(self, namespace: str) -> list[dict[str, Any]]:
        return self._of("RoleBinding", namespace)

    def role(self, namespace: str, name: str) -> dict[str, Any] | None:
        return next((o for o in self._of("Role", namespace) if o["metadata"]["name"] == name), None)

    def cluster_role(self, name: str) -> dict[str, Any] | None:
        return next((o for o in self._of("ClusterRole") if o["metadata"]["name"] == name), None)


def role(kind: str, name: str, rules: list[dict[str, Any]], namespace: str | None = None) -> dict[str, Any]:
    meta = {"name": name} | ({"namespace": namespace} if namespace else {})
    return {"kind": kind, "metadata": meta, "rules": rules}


def binding(
    kind: str,
    name: str,
    ref_kind: str,
    ref: str,
    subjects: list[dict[str, str]],
    namespace: str | None = None,
) -> dict[str, Any]:
    meta = {"name": name} | ({"namespace": namespace} if namespace else {})
    return {
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": ref_kind, "name": ref},
        "subjects": subjects,
    }


READER = role("ClusterRole", "reader", [rule([""], ["pods"], ["get", "list"])])


def test_rolebinding_to_a_clusterrole_grants_only_in_its_namespace() -> None:
    policy = Policy(
        READER,
        # A ServiceAccount subject without a namespace is the RoleBinding's own namespace.
        binding(
            "RoleBinding", "read", "ClusterRole", "reader", [{"kind": "ServiceAccount", "name": "op"}], "ops"
        ),
    )
    allowed = authorize(policy, attrs("GET", "/api/v1/namespaces/ops/pods"))
    assert allowed.allowed
    assert allowed.reason == (
        'RBAC: allowed by RoleBinding "read/ops" of ClusterRole "reader" to ServiceAccount "op/ops"'
    )
    assert not authorize(policy, attrs("GET", "/api/v1/namespaces/other/pods")).allowed
    assert not authorize(policy, attrs("GET", "/api/v1/pods")).allowed
    # The same binding in another namespace names another ServiceAccount.
    elsewhere = Policy(
        READER,
        binding(
            "RoleBinding",
            "read",
            "ClusterRole",
            "reader",
            [{"kind": "ServiceAccount", "name": "op"}],
            "other",
        ),
    )
    assert not authorize(elsewhere, attrs("GET", "/api/v1/namespaces/other/pods")).allowed


def test_clusterrolebinding_subjects_users_and_groups() -> None:
    policy = Policy(
        READER,
        binding("ClusterRoleBinding", "devs", "ClusterRole", "reader", [{"kind": "Group", "name": "devs"}]),
    )
    decision = authorize(policy, attrs("GET", "/api/v1/pods", user=ALICE))
    assert (
        decision.reason
        == 'RBAC: allowed by ClusterRoleBinding "devs" of ClusterRole "reader" to Group "devs"'
    )
    assert not authorize(policy, attrs("GET", "/api/v1/pods")).allowed
    assert not authorize(policy, attrs("DELETE", "/api/v1/namespaces/a/pods/p", user=ALICE)).allowed


def test_a_binding_to_a_missing_role_is_the_denials_reason() -> None:
    policy = Policy(
        binding("ClusterRoleBinding", "x", "ClusterRole", "gone", [{"kind": "User", "name": "alice"}]),
        binding("RoleBinding", "y", "Role", "absent", [{"kind": "User", "name": "alice"}], "a"),
    )
    decision = authorize(policy, attrs("GET", "/api/v1/namespaces/a/pods", user=ALICE))
    assert not decision.allowed
    assert decision.reason == (
        'RBAC: [clusterrole.rbac.authorization.k8s.io "gone" not found, '
        'role.rbac.authorization.k8s.io "absent" not found]'
    )
    _rules, errors = rules_for(policy, ALICE, "")
    assert errors == ['clusterrole.rbac.authorization.k8s.io "gone" not found']


def test_covers_breaks_rules_down_and_reports_what_is_missing() -> None:
    held = [
        rule([""], ["pods"], ["get", "list", "watch", "patch"]),
        rule(["ray.io"], ["*/status"], ["update"]),
    ]
    ok, missing = covers(
        held, [rule([""], ["pods"], ["get", "patch"]), rule(["ray.io"], ["rayclusters/status"], ["update"])]
    )
    assert ok and missing == []
    ok, missing = covers(held, [rule(["", "ray.io"], ["pods"], ["get", "delete"], ["p"])])
    assert not ok
    assert [compact_string(m) for m in missing] == [
        '{APIGroups:[""], Resources:["pods"], ResourceNames:["p"], Verbs:["delete"]}',
        '{APIGroups:["ray.io"], Resources:["pods"], ResourceNames:["p"], Verbs:["get"]}',
        '{APIGroups:["ray.io"], Resources:["pods"], ResourceNames:["p"], Verbs:["delete"]}',
    ]
    # Held resourceNames cover only those names; a rule for every name is not covered by them.
    ok, _ = covers([rule([""], ["pods"], ["get"], ["p"])], [rule([""], ["pods"], ["get"])])
    assert not ok


def test_escalation_message_compacts_verbs_per_resource() -> None:
    _ok, missing = covers(
        [], [rule([""], ["pods"], ["get", "list"]), {"nonResourceURLs": ["/x"], "verbs": ["get"]}]
    )
    assert escalation_message(SA, missing, []) == (
        'user "system:serviceaccount:ops:op" (groups=["system:serviceaccounts" "system:serviceaccounts:ops" '
        '"system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}\n'
        '{NonResourceURLs:["/x"], Verbs:["get"]}'
    )


def test_forbidden_bodies() -> None:
    cluster = forbidden(
        attrs("GET", "/apis/ray.io/v1/rayclusters", user=service_account_user("ns", "sa", "u"))
    )
    assert cluster.body() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'rayclusters.ray.io is forbidden: User "system:serviceaccount:ns:sa" cannot list resource '
        '"rayclusters" in API group "ray.io" at the cluster scope',
        "reason": "Forbidden",
        "details": {"group": "ray.io", "kind": "rayclusters"},
        "code": 403,
    }
    named = forbidden(
        attrs("PUT", "/api/v1/namespaces/x/pods/p/status"),
        'RBAC: role.rbac.authorization.k8s.io "r" not found',
    )
    assert named.message == (
        'pods "p" is forbidden: User "system:serviceaccount:ops:op" cannot update resource "pods/status" '
        'in API group "" in the namespace "x": RBAC: role.rbac.authorization.k8s.io "r" not found'
    )
    assert named.details == {"name": "p", "kind": "pods"}
    path = forbidden(attrs("GET", "/metrics"))
    assert path.message == 'forbidden: User "system:serviceaccount:ops:op" cannot get path "/metrics"'
    assert path.details == {}


def test_service_account_tokens() -> None:
    tokens = ServiceAccountTokens()
    uids = {("ops", "op"): "uid-1"}

    def lookup(ns: str, name: str) -> str | None:
        return uids.get((ns, name))

    token = tokens.issue(
        "ops", "op", "uid-1", audiences=list(tokens.audiences), now=1000, expiration_seconds=600
    )
    user = tokens.authenticate(token, 1000, lookup)
    assert user is not None and user.name == "system:serviceaccount:ops:op"
    assert user.groups == ("system:serviceaccounts", "system:serviceaccounts:ops", "system:authenticated")
    assert tokens.authenticate(token, 1600, lookup) is None  # expired
    header, payload, sig = token.split(".")
    assert tokens.authenticate(f"{header}.{payload}.{sig[::-1]}", 1000, lookup) is None
    assert ServiceAccountTokens().authenticate(token, 1000, lookup) is None  # another server's key
    other = tokens.issue("ops", "op", "uid-1", audiences=["vault"], now=1000, expiration_seconds=600)
    assert tokens.authenticate(other, 1000, lookup) is None  # not for this API server
    uids[("ops", "op")] = "uid-2"  # the ServiceAccount was deleted and recreated
    assert tokens.authenticate(token, 1000, lookup) is None


def _impersonation(
    allowed: Callable[[Attributes], bool],
) -> tuple[Impersonation, list[tuple[str, str, str, str, str]]]:
    asked: list[tuple[str, str, str, str, str]] = []

    def decide(a: Attributes) -> Decision:
        asked.append((a.verb, a.api_group, a.combined_resource, a.namespace, a.name))
        return Decision(allowed(a))

    return Impersonation(decide, forbidden), asked


def test_legacy_impersonation_checks_every_header_and_builds_the_user() -> None:
    impersonation, asked = _impersonation(lambda a: not a.verb.startswith("impersonate-on:"))
    headers = CIMultiDict(
        [
            ("Impersonate-User", "bob"),
            ("Impersonate-Uid", "u-1"),
            ("Impersonate-Extra-Scopes", "view"),
            ("impersonate-extra-scopes", "edit"),
        ]
    )
    user = impersonation.impersonate(attrs("GET", "/api", user=ALICE), headers)
    assert (user.name, user.uid, user.groups, user.extra) == (
        "bob",
        "u-1",
        ("system:authenticated",),
        {"scopes": ["view", "edit"]},
    )
    # user-info is refused at its first question, then legacy asks for each header in upstream's order.
    assert asked == [
        ("impersonate-on:user-info:get", "", "", "", ""),
        ("impersonate", "", "users", "", "bob"),
        ("impersonate", "authentication.k8s.io", "uids", "", "u-1"),
        ("impersonate", "authentication.k8s.io", "userextras/scopes", "", "view"),
        ("impersonate", "authentication.k8s.io", "userextras/scopes", "", "edit"),
    ]
    asked.clear()  # legacy succeeded for alice, so it is tried first from now on
    anonymous = impersonation.impersonate(
        attrs("GET", "/api", user=ALICE), CIMultiDict([("Impersonate-User", "system:anonymous")])
    )
    assert anonymous.groups == ("system:unauthenticated",)
    assert asked == [("impersonate", "", "users", "", "system:anonymous")]


def test_constrained_impersonation_modes_and_their_refusals() -> None:
    impersonation, asked = _impersonation(lambda a: True)
    request = attrs("GET", "/api/v1/namespaces/a/pods", user=ALICE)
    node = impersonation.impersonate(request, CIMultiDict([("Impersonate-User", "system:node:n1")]))
    assert node.groups == ("system:nodes", "system:authenticated")
    assert asked == [
        ("impersonate-on:arbitrary-node:list", "", "pods", "a", ""),
        ("impersonate:arbitrary-node", "authentication.k8s.io", "nodes", "", "n1"),
    ]
    asked.clear()
    account = impersonation.impersonate(
        request, CIMultiDict([("Impersonate-User", "system:serviceaccount:ops:op")])
    )
    assert account.groups == ("system:serviceaccounts", "system:serviceaccounts:ops", "system:authenticated")
    sa_check = ("impersonate:serviceaccount", "authentication.k8s.io", "serviceaccounts", "ops", "op")
    assert asked[-1] == sa_check

    nothing, _ = _impersonation(lambda a: False)
    with pytest.raises(StatusError) as refused:
        nothing.impersonate(request, CIMultiDict([("Impersonate-User", "bob")]))
    assert refused.value.message == (
        'pods is forbidden: User "alice" cannot impersonate-on:user-info:list resource "pods" in API '
        'group "" in the namespace "a"'
    )
    # system:masters is never impersonated in a constrained mode, whatever the grants; legacy may.
    masters = CIMultiDict([("Impersonate-User", "bob"), ("Impersonate-Group", "system:masters")])
    constrained_only, _ = _impersonation(lambda a: a.verb != "impersonate")
    with pytest.raises(StatusError) as refused:
        constrained_only.impersonate(request, masters)
    assert refused.value.message == (
        'groups.authentication.k8s.io "system:masters" is forbidden: User "alice" cannot '
        'impersonate:user-info resource "groups" in API group "authentication.k8s.io" at the cluster '
        "scope: impersonating the system:masters group is not allowed"
    )
    with pytest.raises(StatusError) as bad:  # groups without a user
        impersonation.impersonate(request, CIMultiDict([("Impersonate-Group", "g")]))
    assert (bad.value.code, bad.value.message) == (
        400,
        'requested &user.DefaultInfo{Name:"", UID:"", Groups:[]string{"g"}, '
        "Extra:map[string][]string(nil)} without impersonating a user name",
    )
    assert impersonation.impersonate(request, CIMultiDict()) is ALICE
