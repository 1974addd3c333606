"""What a controller author does with the package roots ``kuberay_py.client`` and ``kuberay_py.cache``.

Every step below uses only names exported by the package root, so a rename or a move that breaks
callers fails here with the behaviour it broke, not with a list of strings to update.
"""

from __future__ import annotations

from typing import get_args

import kuberay_py.cache as cache
import kuberay_py.client as client


def _status(code: int, reason: str) -> dict[str, object]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason}


def test_errors_from_the_api_are_the_typed_public_exceptions() -> None:
    cases = [
        (400, "BadRequest", client.BadRequest),
        (401, "Unauthorized", client.Unauthorized),
        (403, "Forbidden", client.Forbidden),
        (404, "NotFound", client.NotFound),
        (405, "MethodNotAllowed", client.MethodNotAllowed),
        (409, "Conflict", client.Conflict),
        (409, "AlreadyExists", client.AlreadyExists),
        (410, "Expired", client.Gone),
        (422, "Invalid", client.Invalid),
        (429, "TooManyRequests", client.TooManyRequests),
        (500, "InternalError", client.ServerError),
    ]
    for code, reason, cls in cases:
        error = client.error_from_status(code, _status(code, reason))
        assert type(error) is cls, (code, reason, type(error))
        assert isinstance(error, client.ApiError) and error.status == code
    # A create that already exists is a different decision from a stale update: not a Conflict.
    assert not isinstance(client.error_from_status(409, _status(409, "AlreadyExists")), client.Conflict)
    assert isinstance(client.TransportError("no answer"), client.ApiError)


def test_resources_build_the_paths_the_api_server_serves() -> None:
    pods = client.resources.PODS
    assert pods.path("ns", "p") == "/api/v1/namespaces/ns/pods/p"
    assert pods.path("ns", "p", "status") == "/api/v1/namespaces/ns/pods/p/status"
    rc = client.Resource("ray.io", "v1", "RayCluster", "rayclusters")
    assert rc.api_version == "ray.io/v1"
    assert rc.path("ns") == "/apis/ray.io/v1/namespaces/ns/rayclusters"
    assert client.resources.NODES.path(name="n1") == "/api/v1/nodes/n1"


def test_query_and_patch_encodings_are_what_the_api_server_parses() -> None:
    assert client.encode_query({"watch": True, "limit": 500, "continue": None}) == [
        ("watch", "true"),
        ("limit", "500"),
    ]
    assert set(client.PATCH_CONTENT_TYPES) == set(get_args(client.PatchType))
    assert client.PATCH_CONTENT_TYPES["merge"] == "application/merge-patch+json"


def test_a_store_indexes_objects_by_namespace_owner_and_label() -> None:
    store = cache.Store()
    store.add_label_index("app")
    owner = {"uid": "owner-1", "controller": True, "kind": "RayCluster", "name": "rc"}
    pod = {
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "labels": {"app": "ray"},
            "ownerReferences": [owner],
            "managedFields": [{"manager": "kubectl"}],
        }
    }
    store.upsert(cache.strip_managed_fields(pod))
    key = cache.object_key(pod)
    assert key == "ns/p" and cache.object_key({"metadata": {"name": "node"}}) == "node"
    assert "managedFields" not in (store.get(key) or {})["metadata"]
    assert cache.controller_owner_uid(pod) == "owner-1"
    assert store.by_index(cache.INDEX_NAMESPACE, "ns") == [store.get(key)]
    assert store.by_index(cache.INDEX_OWNER, "owner-1") == [store.get(key)]
    assert store.index_keys(cache.label_index("app"), "ray") == {key}
    store.remove(key)
    assert store.by_index(cache.INDEX_OWNER, "owner-1") == []
