"""RBAC as kube-apiserver enforces it, over HTTP: ServiceAccount tokens, bindings, reviews, 401/403 bodies.

Runs against ``Environment(rbac=True, simulate=True)``: the built-in server with RBAC on, or a
real kube-apiserver (``--authorization-mode=RBAC``, always on there), with the cluster simulator,
whose clusterrole-aggregation controller fills in aggregated ClusterRoles as
kube-controller-manager's does (neither API server does it). A real server's authorizer reads
informer caches, so a grant becomes visible shortly after the write; checks that follow a grant
poll until the answer settles (immediate on the built-in server).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest_asyncio
from multidict import MultiDict

from kuberay_py.client import ClientConfig
from kuberay_py.envtest import Environment
from tests.polling import eventually

NS = "rbac-sa"
OTHER = "rbac-other"
SA = "worker"
USER = f"system:serviceaccount:{NS}:{SA}"
RBAC_API = "/apis/rbac.authorization.k8s.io/v1"
WAIT = 30.0  # propagation bound on a real server, not a performance figure


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def env() -> AsyncIterator[Environment]:
    async with Environment(rbac=True, simulate=True) as e:
        for ns in (NS, OTHER):
            await e.create_namespace(ns)
        yield e


class Caller:
    """Raw HTTP as one identity (status code and decoded body, nothing interpreted)."""

    def __init__(self, config: ClientConfig, authorization: str | None) -> None:
        self.config = config
        self.authorization = authorization

    async def __call__(
        self, method: str, path: str, body: Any = None, impersonate: list[tuple[str, str]] | None = None
    ) -> tuple[int, Any]:
        headers: Any = MultiDict({"Accept": "application/json"})
        headers.extend(impersonate or [])
        if self.authorization:
            headers["Authorization"] = self.authorization
        data = None
        if body is not None:
            data, headers["Content-Type"] = orjson.dumps(body), "application/json"
        ssl = self.config.ssl_context if self.config.ssl_context is not None else True
        async with (
            aiohttp.ClientSession() as session,
            session.request(method, self.config.host + path, data=data, headers=headers, ssl=ssl) as resp,
        ):
            raw = await resp.read()
            try:
                return resp.status, orjson.loads(raw)
            except orjson.JSONDecodeError:
                return resp.status, raw.decode()


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def admin(env: Environment) -> Caller:
    """The environment's admin: its token, or (real mode) the client certificate in its TLS context."""
    return Caller(env.client_config, env.client_config.token)


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def sa(env: Environment, admin: Caller) -> Caller:
    status, _ = await admin("POST", f"/api/v1/namespaces/{NS}/serviceaccounts", {"metadata": {"name": SA}})
    assert status == 201
    config = await env.service_account_config(NS, SA)
    return Caller(config, config.token)


def _forbidden(message: str, details: dict[str, str]) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Forbidden",
        "details": details,
        "code": 403,
    }


async def test_a_token_request_token_is_the_service_account(env: Environment, sa: Caller) -> None:
    status, review = await sa("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {})
    assert status == 201, review
    info = review["status"]["userInfo"]
    assert info["username"] == USER
    assert info["groups"] == [
        "system:serviceaccounts",
        f"system:serviceaccounts:{NS}",
        "system:authenticated",
    ]


async def test_forbidden_answers_are_kube_apiservers(sa: Caller) -> None:
    # Authorization comes before routing: a group that is not even served is still a 403.
    status, body = await sa("GET", "/apis/ray.io/v1/rayclusters")
    assert (status, body) == (
        403,
        _forbidden(
            f'rayclusters.ray.io is forbidden: User "{USER}" cannot list resource "rayclusters" in API group '
            '"ray.io" at the cluster scope',
            {"group": "ray.io", "kind": "rayclusters"},
        ),
    )
    status, body = await sa("GET", f"/api/v1/namespaces/{OTHER}/pods?watch=true")
    assert (status, body) == (
        403,
        _forbidden(
            f'pods is forbidden: User "{USER}" cannot watch resource "pods" in API group "" in the namespace '
            f'"{OTHER}"',
            {"kind": "pods"},
        ),
    )
    status, body = await sa("PUT", f"/apis/ray.io/v1/namespaces/{OTHER}/rayclusters/c/status", {})
    assert (status, body) == (
        403,
        _forbidden(
            f'rayclusters.ray.io "c" is forbidden: User "{USER}" cannot update resource "rayclusters/status" '
            f'in API group "ray.io" in the namespace "{OTHER}"',
            {"name": "c", "group": "ray.io", "kind": "rayclusters"},
        ),
    )
    status, body = await sa("GET", "/metrics")
    assert (status, body) == (403, _forbidden(f'forbidden: User "{USER}" cannot get path "/metrics"', {}))


async def test_discovery_is_open_to_authenticated_users_only(sa: Caller) -> None:
    status, groups = await sa("GET", "/apis")
    assert status == 200 and groups["kind"] == "APIGroupList"
    # The ServiceAccount's TLS context has the CA only (the admin's would present its certificate).
    anonymous = Caller(sa.config, None)
    status, body = await anonymous("GET", "/api")
    assert (status, body["message"]) == (403, 'forbidden: User "system:anonymous" cannot get path "/api"')
    status, _ = await anonymous("GET", "/version")
    assert status == 200  # system:public-info-viewer


async def test_an_invalid_token_is_401_not_anonymous(sa: Caller) -> None:
    status, body = await Caller(sa.config, "Bearer not-a-token")("GET", "/version")
    assert (status, body) == (
        401,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Unauthorized",
            "reason": "Unauthorized",
            "code": 401,
        },
    )


def _ssar(verb: str, resource: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": verb, "resource": resource, "namespace": namespace}},
    }


async def test_a_rolebinding_to_a_clusterrole_grants_in_its_namespace_only(admin: Caller, sa: Caller) -> None:
    role = {
        "metadata": {"name": "rbac-test-pod-reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}],
    }
    assert (await admin("POST", f"{RBAC_API}/clusterroles", role))[0] == 201
    binding = {
        "metadata": {"name": "read"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "rbac-test-pod-reader",
        },
        "subjects": [{"kind": "ServiceAccount", "name": SA}],  # no namespace: the binding's own
    }
    assert (await admin("POST", f"{RBAC_API}/namespaces/{NS}/rolebindings", binding))[0] == 201

    async def granted() -> bool:
        return (await sa("GET", f"/api/v1/namespaces/{NS}/pods"))[0] == 200

    await eventually(granted, "the RoleBinding takes effect", WAIT)
    assert (await sa("GET", f"/api/v1/namespaces/{OTHER}/pods"))[0] == 403
    assert (await sa("GET", "/api/v1/pods"))[0] == 403
    status, review = await sa(
        "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", _ssar("list", "pods", NS)
    )
    assert status == 201
    assert review["status"] == {
        "allowed": True,
        "reason": f'RBAC: allowed by RoleBinding "read/{NS}" of ClusterRole "rbac-test-pod-reader" to '
        f'ServiceAccount "{SA}/{NS}"',
    }
    status, review = await sa(
        "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", _ssar("delete", "pods", NS)
    )
    assert (status, review["status"]) == (201, {"allowed": False})


async def test_a_binding_to_a_missing_role_is_the_reason_of_the_403(admin: Caller, sa: Caller) -> None:
    binding = {
        "metadata": {"name": "dangling"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "absent"},
        "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": NS}],
    }
    assert (await admin("POST", f"{RBAC_API}/namespaces/{OTHER}/rolebindings", binding))[0] == 201
    want = (
        f'secrets is forbidden: User "{USER}" cannot list resource "secrets" in API group "" in the '
        f'namespace "{OTHER}": RBAC: role.rbac.authorization.k8s.io "absent" not found'
    )

    async def reported() -> bool:
        status, body = await sa("GET", f"/api/v1/namespaces/{OTHER}/secrets")
        return status == 403 and body["message"] == want

    await eventually(reported, "the dangling binding in the 403 reason", WAIT)


async def test_a_role_may_grant_only_what_its_creator_holds(admin: Caller, sa: Caller) -> None:
    role_admin = {
        "metadata": {"name": "role-admin"},
        "rules": [
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["create"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]},
        ],
    }
    assert (await admin("POST", f"{RBAC_API}/namespaces/{NS}/roles", role_admin))[0] == 201
    binding = {
        "metadata": {"name": "role-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "role-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": NS}],
    }
    assert (await admin("POST", f"{RBAC_API}/namespaces/{NS}/rolebindings", binding))[0] == 201
    modest = {
        "metadata": {"name": "modest"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
    }

    async def created() -> bool:
        return (await sa("POST", f"{RBAC_API}/namespaces/{NS}/roles", modest))[0] == 201

    await eventually(created, "a Role within the creator's rights", WAIT)
    greedy = {
        "metadata": {"name": "greedy"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get", "delete"]}],
    }
    status, body = await sa("POST", f"{RBAC_API}/namespaces/{NS}/roles", greedy)
    assert status == 403
    assert body["details"] == {"name": "greedy", "group": "rbac.authorization.k8s.io", "kind": "roles"}
    groups = f'["system:serviceaccounts" "system:serviceaccounts:{NS}" "system:authenticated"]'
    assert body["message"] == (
        f'roles.rbac.authorization.k8s.io "greedy" is forbidden: user "{USER}" (groups={groups}) is '
        "attempting to grant RBAC permissions not currently held:\n"
        '{APIGroups:[""], Resources:["configmaps"], Verbs:["delete"]}\n'
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "delete"]}'
    )


async def test_a_token_dies_with_its_service_account(env: Environment, admin: Caller) -> None:
    path = f"/api/v1/namespaces/{NS}/serviceaccounts"
    assert (await admin("POST", path, {"metadata": {"name": "short-lived"}}))[0] == 201
    config = await env.service_account_config(NS, "short-lived")
    short = Caller(config, config.token)
    assert (await short("GET", "/apis"))[0] == 200
    assert (await admin("DELETE", f"{path}/short-lived"))[0] == 200

    async def rejected() -> bool:
        return (await short("GET", "/apis"))[0] == 401

    await eventually(rejected, "the deleted ServiceAccount's token is rejected", WAIT)


async def test_aggregated_cluster_roles_collect_the_selected_rules(admin: Caller) -> None:
    label = {"rbac.kuberay-py.test/aggregate-to-monitoring": "true"}
    parts = {
        "rbac-test-agg-b": [
            {"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["get", "list"]}
        ],
        "rbac-test-agg-a": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }
    for name, rules in parts.items():
        body = {"metadata": {"name": name, "labels": label}, "rules": rules}
        assert (await admin("POST", f"{RBAC_API}/clusterroles", body))[0] == 201
    aggregate = {
        "metadata": {"name": "rbac-test-monitoring"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": label}]},
    }
    assert (await admin("POST", f"{RBAC_API}/clusterroles", aggregate))[0] == 201
    # The union of the selected roles' rules, taken in name order, written by the simulator's
    # clusterrole-aggregation controller (kube-controller-manager's in a real cluster).
    want = parts["rbac-test-agg-a"] + parts["rbac-test-agg-b"]

    async def aggregated() -> bool:
        _, role = await admin("GET", f"{RBAC_API}/clusterroles/rbac-test-monitoring")
        return bool(role.get("rules") == want)

    await eventually(aggregated, "the aggregation fills in the rules", WAIT)
    _, role = await admin("GET", f"{RBAC_API}/clusterroles/rbac-test-monitoring")
    writers = {(m["manager"], m["operation"]) for m in role["metadata"]["managedFields"]}
    assert ("clusterrole-aggregation-controller", "Apply") in writers  # server-side apply, forced
    assert (await admin("DELETE", f"{RBAC_API}/clusterroles/rbac-test-agg-b"))[0] == 200

    async def shrunk() -> bool:
        _, role = await admin("GET", f"{RBAC_API}/clusterroles/rbac-test-monitoring")
        return bool(role.get("rules") == parts["rbac-test-agg-a"])

    await eventually(shrunk, "a deleted part leaves the aggregate", WAIT)


async def test_bindings_are_defaulted_and_validated(admin: Caller) -> None:
    path = f"{RBAC_API}/namespaces/{OTHER}/rolebindings"
    body = {
        "metadata": {"name": "defaulted"},
        "roleRef": {"kind": "ClusterRole", "name": "view"},
        "subjects": [
            {"kind": "User", "name": "alice"},
            {"kind": "ServiceAccount", "name": SA, "namespace": NS},
        ],
    }
    status, created = await admin("POST", path, body)
    assert status == 201, created
    assert created["roleRef"]["apiGroup"] == "rbac.authorization.k8s.io"
    assert [s.get("apiGroup", "") for s in created["subjects"]] == ["rbac.authorization.k8s.io", ""]
    wrong = {
        "metadata": {"name": "wrong"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Secret", "name": "x"},
        "subjects": [{"kind": "ServiceAccount", "apiGroup": "rbac.authorization.k8s.io", "name": SA}],
    }
    status, answer = await admin("POST", path, wrong)
    assert (status, answer["reason"]) == (422, "Invalid")
    assert {c["field"] for c in answer["details"]["causes"]} == {"roleRef.kind", "subjects[0].apiGroup"}
    changed = {**created, "roleRef": {**created["roleRef"], "name": "edit"}}
    status, answer = await admin("PUT", f"{path}/defaulted", changed)
    assert (status, answer["reason"]) == (422, "Invalid")
    assert [c["field"] for c in answer["details"]["causes"]] == ["roleRef"]


async def test_an_aggregation_rule_takes_cluster_admin_rights(admin: Caller, sa: Caller) -> None:
    creator = {
        "metadata": {"name": "rbac-test-clusterrole-creator"},
        "rules": [
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["create"]}
        ],
    }
    assert (await admin("POST", f"{RBAC_API}/clusterroles", creator))[0] == 201
    binding = {
        "metadata": {"name": "rbac-test-clusterrole-creator"},
        "roleRef": {"kind": "ClusterRole", "name": "rbac-test-clusterrole-creator"},
        "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": NS}],
    }
    assert (await admin("POST", f"{RBAC_API}/clusterrolebindings", binding))[0] == 201
    aggregate = {
        "metadata": {"name": "rbac-test-sneaky"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"anything": "true"}}]},
    }

    async def refused() -> bool:
        status, body = await sa("POST", f"{RBAC_API}/clusterroles", aggregate)
        return status == 403 and body["message"] == (
            'clusterroles.rbac.authorization.k8s.io "rbac-test-sneaky" is forbidden: '
            "must have cluster-admin privileges to use the aggregationRule"
        )

    await eventually(refused, "the aggregationRule refused to a non-admin", WAIT)
    plain = {"metadata": {"name": "rbac-test-plain"}, "rules": []}
    assert (await sa("POST", f"{RBAC_API}/clusterroles", plain))[0] == 201


async def test_token_request_defaults_and_validation(admin: Caller, sa: Caller) -> None:
    path = f"/api/v1/namespaces/{NS}/serviceaccounts/{SA}/token"
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    status, answer = await admin("POST", path, request)
    assert status == 201, answer
    assert answer["kind"] == "TokenRequest" and answer["spec"]["expirationSeconds"] == 3600
    assert (
        answer["spec"]["audiences"] and answer["status"]["token"] and answer["status"]["expirationTimestamp"]
    )
    short = {**request, "spec": {"expirationSeconds": 599}}
    status, answer = await admin("POST", path, short)
    assert (status, answer["reason"]) == (422, "Invalid")
    assert answer["message"] == (
        'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: '
        "may not specify a duration less than 10 minutes"
    )
    assert answer["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: 599: may not specify a duration less than 10 minutes",
            "field": "spec.expirationSeconds",
        }
    ]
    status, answer = await admin("POST", f"/api/v1/namespaces/{NS}/serviceaccounts/nobody/token", request)
    assert (status, answer["message"]) == (404, 'serviceaccounts "nobody" not found')
    # Minting tokens is itself a permission (create serviceaccounts/token) the worker lacks.
    status, answer = await sa("POST", path, request)
    assert (status, answer["details"]) == (403, {"name": SA, "kind": "serviceaccounts"})


async def test_impersonation_is_authorized_then_acts_as_the_other_user(admin: Caller, sa: Caller) -> None:
    review = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
    status, answer = await admin("POST", review, {}, [("Impersonate-User", USER)])
    assert status == 201, answer
    info = answer["status"]["userInfo"]
    assert (info["username"], info["groups"]) == (
        USER,
        ["system:serviceaccounts", f"system:serviceaccounts:{NS}", "system:authenticated"],
    )
    as_alice = [("Impersonate-User", "alice"), ("Impersonate-Group", "devs"), ("Impersonate-Group", "ops")]
    status, answer = await admin("POST", review, {}, as_alice)
    info = answer["status"]["userInfo"]
    assert (status, info["username"], info["groups"]) == (
        201,
        "alice",
        ["devs", "ops", "system:authenticated"],
    )
    # Impersonating as the ServiceAccount, the admin has only the ServiceAccount's rights (the
    # ClusterRole "view" it holds in OTHER leaves out Secrets).
    status, _ = await admin("GET", f"/api/v1/namespaces/{OTHER}/secrets", None, [("Impersonate-User", USER)])
    assert status == 403
    # Kubernetes 1.36's constrained impersonation (KEP-5284): with no right at all, the answer is
    # the first mode's refusal, "may it get /api while impersonating a user-info user?".
    status, body = await sa("GET", "/api", None, [("Impersonate-User", "bob")])
    assert (status, body) == (
        403,
        _forbidden(f'forbidden: User "{USER}" cannot impersonate-on:user-info:get path "/api"', {}),
    )
    status, body = await sa("GET", "/api", None, [("Impersonate-User", "system:serviceaccount:default:x")])
    assert (status, body) == (
        403,
        _forbidden(f'forbidden: User "{USER}" cannot impersonate-on:serviceaccount:get path "/api"', {}),
    )
    status, body = await sa("GET", "/api", None, [("Impersonate-Group", "devs")])
    assert (status, body["reason"], body["message"]) == (
        400,
        "BadRequest",
        'requested &user.DefaultInfo{Name:"", UID:"", Groups:[]string{"devs"}, '
        "Extra:map[string][]string(nil)} without impersonating a user name",
    )


async def test_constrained_impersonation_asks_for_the_request_then_for_the_user(
    admin: Caller, sa: Caller
) -> None:
    role: dict[str, Any] = {
        "metadata": {"name": "rbac-test-impersonate-bob"},
        "rules": [{"nonResourceURLs": ["/api"], "verbs": ["impersonate-on:user-info:get"]}],
    }
    assert (await admin("POST", f"{RBAC_API}/clusterroles", role))[0] == 201
    binding = {
        "metadata": {"name": "rbac-test-impersonate-bob"},
        "roleRef": {"kind": "ClusterRole", "name": "rbac-test-impersonate-bob"},
        "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": NS}],
    }
    assert (await admin("POST", f"{RBAC_API}/clusterrolebindings", binding))[0] == 201
    as_bob = [("Impersonate-User", "bob")]
    want = _forbidden(
        f'users.authentication.k8s.io "bob" is forbidden: User "{USER}" cannot impersonate:user-info '
        'resource "users" in API group "authentication.k8s.io" at the cluster scope',
        {"name": "bob", "group": "authentication.k8s.io", "kind": "users"},
    )

    async def may_get_api_but_not_be_bob() -> bool:
        return await sa("GET", "/api", None, as_bob) == (403, want)

    await eventually(may_get_api_but_not_be_bob, "the impersonate-on grant takes effect", WAIT)
    status, current = await admin("GET", f"{RBAC_API}/clusterroles/rbac-test-impersonate-bob")
    assert status == 200
    current["rules"].append(
        {
            "apiGroups": ["authentication.k8s.io"],
            "resources": ["users"],
            "resourceNames": ["bob"],
            "verbs": ["impersonate:user-info"],
        }
    )
    assert (await admin("PUT", f"{RBAC_API}/clusterroles/rbac-test-impersonate-bob", current))[0] == 200

    async def is_bob() -> bool:
        status, body = await sa("GET", "/api", None, as_bob)
        return status == 200 and body["kind"] == "APIVersions"

    await eventually(is_bob, "the impersonate:user-info grant takes effect", WAIT)
    # The grant is for "get /api" only: any other request while impersonating is refused.
    status, body = await sa("GET", "/apis", None, as_bob)
    assert (status, body["message"]) == (
        403,
        f'forbidden: User "{USER}" cannot impersonate-on:user-info:get path "/apis"',
    )
