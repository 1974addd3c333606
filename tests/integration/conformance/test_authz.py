"""Authorization-related answers where the built-in server once differed from kube-apiserver 1.36.

* ClusterRole aggregation is kube-controller-manager's work: an API server alone stores the
  ``aggregationRule`` and leaves ``rules`` empty (the built-in server used to fill them in), and
  an empty ``rules`` reads back as ``null`` (the built-in server left the key out).
* Impersonation is constrained impersonation (KEP-5284): a node is impersonated by the
  ``arbitrary-node`` mode, which puts it in ``system:nodes`` (legacy impersonation, the built-in
  server's only mode before, gave it ``system:authenticated`` alone); groups without a user name
  are a 400, not a 500.
"""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio import client as k

from kuberay_py.client import Client
from kuberay_py.client import resources as r

REVIEWS = "/apis/authentication.k8s.io/v1/selfsubjectreviews"


async def _review_as(api: k.ApiClient, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    """POST a SelfSubjectReview with ``headers``: the status code and the decoded body."""
    resp = await api.call_api(
        REVIEWS,
        "POST",
        header_params={"Accept": "application/json", "Content-Type": "application/json", **headers},
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
        auth_settings=["BearerToken"],
        _preload_content=False,
    )
    try:
        body: dict[str, Any] = await resp.json()
    finally:
        resp.release()
    return resp.status, body


async def test_an_api_server_alone_never_fills_in_an_aggregated_cluster_role(k8s: Client) -> None:
    label = {"conformance.kuberay.io/aggregate-to-reader": "true"}
    part = {
        "metadata": {"name": "conformance-agg-part", "labels": label},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    }
    aggregate = {
        "metadata": {"name": "conformance-agg-reader"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": label}]},
    }
    try:
        await k8s.create(r.CLUSTERROLES, part)
        created = await k8s.create(r.CLUSTERROLES, aggregate)
        assert created["rules"] is None  # rbac/v1 has no omitempty on rules
        # The part existed before the aggregate was written: a server that aggregated would
        # have done so by now; kube-apiserver leaves it to the controller manager.
        stored = await k8s.get(r.CLUSTERROLES, "conformance-agg-reader")
        assert stored["aggregationRule"] == aggregate["aggregationRule"]
        assert stored["rules"] is None
    finally:
        for name in ("conformance-agg-reader", "conformance-agg-part"):
            await k8s.delete(r.CLUSTERROLES, name)


async def test_impersonating_a_node_puts_it_in_system_nodes(api: k.ApiClient) -> None:
    status, review = await _review_as(api, {"Impersonate-User": "system:node:worker-1"})
    assert status == 201, review
    info = review["status"]["userInfo"]
    assert (info["username"], info["groups"]) == (
        "system:node:worker-1",
        ["system:nodes", "system:authenticated"],
    )
    # Asking for groups too is not the arbitrary-node mode: user-info refuses node names, so
    # legacy impersonation takes it, with the groups asked for.
    status, review = await _review_as(
        api, {"Impersonate-User": "system:node:worker-1", "Impersonate-Group": "devs"}
    )
    assert status == 201, review
    info = review["status"]["userInfo"]
    assert (info["username"], info["groups"]) == ("system:node:worker-1", ["devs", "system:authenticated"])


async def test_impersonating_groups_without_a_user_is_a_bad_request(api: k.ApiClient) -> None:
    status, body = await _review_as(api, {"Impersonate-Group": "devs", "Impersonate-Uid": "u-1"})
    assert (status, body["reason"], body["code"]) == (400, "BadRequest", 400)
    assert body["message"] == (
        'requested &user.DefaultInfo{Name:"", UID:"u-1", Groups:[]string{"devs"}, '
        "Extra:map[string][]string(nil)} without impersonating a user name"
    )
