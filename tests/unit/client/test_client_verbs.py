"""The client's wire format: paths, headers, query encoding, bodies, content types, pagination."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from aiohttp import web

from kuberay_py.client import Client, ClientConfig, Gone, Resource, TransportError, resources

from .conftest import Stub, status

RAYCLUSTERS = Resource("ray.io", "v1", "RayCluster", "rayclusters")


def pod(name: str, ns: str = "default", rv: str = "1") -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "resourceVersion": rv},
    }


def test_resource_paths() -> None:
    assert resources.PODS.path("ns1", "p", "status") == "/api/v1/namespaces/ns1/pods/p/status"
    assert resources.PODS.path() == "/api/v1/pods"
    assert RAYCLUSTERS.path("x", "rc") == "/apis/ray.io/v1/namespaces/x/rayclusters/rc"
    assert RAYCLUSTERS.api_version == "ray.io/v1"
    assert resources.NODES.path("ignored", "n1") == "/api/v1/nodes/n1"
    with pytest.raises(ValueError):
        resources.PODS.path("ns", None, "status")


async def test_get_sends_accept_json_and_token(stub: Stub, client: Client) -> None:
    stub.reply(200, pod("web-0"))
    got = await client.get(resources.PODS, "web-0", "default")
    assert got["metadata"]["name"] == "web-0"
    seen = stub.requests[0]
    assert (seen.method, seen.path) == ("GET", "/api/v1/namespaces/default/pods/web-0")
    assert seen.headers["Accept"] == "application/json"
    assert seen.headers["Authorization"] == "Bearer t0k3n"


async def test_namespaced_get_without_namespace_is_rejected_locally(stub: Stub, client: Client) -> None:
    with pytest.raises(ValueError, match="needs a namespace"):
        await client.get(resources.PODS, "web-0")
    assert stub.requests == []


async def test_list_encodes_selectors_and_booleans(stub: Stub, client: Client) -> None:
    stub.reply(200, {"kind": "PodList", "metadata": {"resourceVersion": "7"}, "items": []})
    await client.list(
        resources.PODS,
        "ns",
        label_selector="ray.io/node-type in (head,worker),!ray.io/x",
        field_selector="status.phase=Running",
        limit=10,
    )
    q = stub.requests[0].query
    assert q == {
        "labelSelector": "ray.io/node-type in (head,worker),!ray.io/x",
        "fieldSelector": "status.phase=Running",
        "limit": "10",
    }


async def test_watch_query_booleans_are_lowercase(stub: Stub, client: Client) -> None:
    stub.reply(200, None)
    events = [e async for e in client.watch(resources.PODS, "ns", resource_version="5", timeout_seconds=300)]
    assert events == []
    raw = stub.requests[0].raw_query
    assert "watch=true" in raw and "allowWatchBookmarks=true" in raw
    assert "True" not in raw
    assert stub.requests[0].query["resourceVersion"] == "5"
    assert stub.requests[0].query["timeoutSeconds"] == "300"


async def test_create_update_status_delete_bodies(stub: Stub, client: Client) -> None:
    stub.reply(201, pod("a"))
    stub.reply(200, pod("a", rv="2"))
    stub.reply(200, pod("a", rv="3"))
    stub.reply(200, {"kind": "Status", "status": "Success"})
    await client.create(resources.PODS, pod("a"), dry_run=True, field_manager="me")
    await client.update(resources.PODS, pod("a", rv="1"))
    await client.update_status(resources.PODS, pod("a", rv="2"))
    await client.delete(
        resources.PODS, "a", "default", propagation_policy="Foreground", preconditions={"uid": "u1"}
    )
    post, put, put_status, delete = stub.requests
    assert (post.method, post.path) == ("POST", "/api/v1/namespaces/default/pods")
    assert post.query == {"dryRun": "All", "fieldManager": "me"}
    assert post.headers["Content-Type"] == "application/json"
    assert (put.method, put.path) == ("PUT", "/api/v1/namespaces/default/pods/a")
    assert orjson.loads(put.body)["metadata"]["resourceVersion"] == "1"
    assert put_status.path == "/api/v1/namespaces/default/pods/a/status"
    assert delete.method == "DELETE"
    assert orjson.loads(delete.body) == {
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "propagationPolicy": "Foreground",
        "preconditions": {"uid": "u1"},
    }


async def test_delete_collection_uses_selector_on_collection_path(stub: Stub, client: Client) -> None:
    stub.reply(200, {"kind": "Status", "status": "Success"})
    await client.delete_collection(resources.PODS, "ns", label_selector="a=b")
    seen = stub.requests[0]
    assert (seen.method, seen.path, seen.query) == (
        "DELETE",
        "/api/v1/namespaces/ns/pods",
        {"labelSelector": "a=b"},
    )


@pytest.mark.parametrize(
    ("patch_type", "body", "content_type"),
    [
        ("merge", {"metadata": {"labels": {"a": "b"}}}, "application/merge-patch+json"),
        ("json", [{"op": "add", "path": "/metadata/labels/a", "value": "b"}], "application/json-patch+json"),
        ("strategic", {"metadata": {"labels": {"a": "b"}}}, "application/strategic-merge-patch+json"),
    ],
)
async def test_patch_content_types(
    stub: Stub, client: Client, patch_type: str, body: object, content_type: str
) -> None:
    stub.reply(200, pod("a"))
    await client.patch(resources.PODS, "a", body, "default", patch_type=patch_type)  # type: ignore[arg-type]
    seen = stub.requests[0]
    assert seen.method == "PATCH"
    assert seen.headers["Content-Type"] == content_type
    assert orjson.loads(seen.body) == body


async def test_server_side_apply_sends_json_with_field_manager_and_force(stub: Stub, client: Client) -> None:
    stub.reply(200, {"kind": "RayCluster", "metadata": {"name": "rc"}})
    body = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "rc"}, "spec": {}}
    await client.patch(
        RAYCLUSTERS, "rc", body, "ns", patch_type="apply", field_manager="kuberay-operator", force=True
    )
    seen = stub.requests[0]
    assert seen.path == "/apis/ray.io/v1/namespaces/ns/rayclusters/rc"
    assert seen.headers["Content-Type"] == "application/apply-patch+yaml"
    assert seen.query == {"fieldManager": "kuberay-operator", "force": "true"}
    assert orjson.loads(seen.body) == body


async def test_patch_argument_errors_are_local(stub: Stub, client: Client) -> None:
    with pytest.raises(ValueError, match="field_manager"):
        await client.patch(RAYCLUSTERS, "rc", {}, "ns", patch_type="apply")
    with pytest.raises(ValueError, match="list of operations"):
        await client.patch(RAYCLUSTERS, "rc", {}, "ns", patch_type="json")
    with pytest.raises(ValueError, match="force"):
        await client.patch(RAYCLUSTERS, "rc", {}, "ns", force=True)
    assert stub.requests == []


async def test_list_all_follows_continue(stub: Stub, client: Client) -> None:
    stub.reply(
        200, {"kind": "PodList", "metadata": {"resourceVersion": "9", "continue": "c1"}, "items": [pod("a")]}
    )
    stub.reply(
        200, {"kind": "PodList", "metadata": {"resourceVersion": "9", "continue": "c2"}, "items": [pod("b")]}
    )
    stub.reply(200, {"kind": "PodList", "metadata": {"resourceVersion": "9"}, "items": [pod("c")]})
    result = await client.list_all(resources.PODS, "default", limit=1, label_selector="x=y")
    assert [i["metadata"]["name"] for i in result["items"]] == ["a", "b", "c"]
    assert result["metadata"] == {"resourceVersion": "9"}
    assert [r.query.get("continue") for r in stub.requests] == [None, "c1", "c2"]
    assert all(r.query["limit"] == "1" and r.query["labelSelector"] == "x=y" for r in stub.requests)


async def test_list_all_transforms_each_page_as_it_arrives(stub: Stub, client: Client) -> None:
    stub.reply(
        200, {"kind": "PodList", "metadata": {"resourceVersion": "9", "continue": "c1"}, "items": [pod("a")]}
    )
    stub.reply(200, {"kind": "PodList", "metadata": {"resourceVersion": "9"}, "items": [pod("b")]})
    seen: list[tuple[str, int]] = []

    def slim(obj: dict[str, Any]) -> dict[str, Any]:
        seen.append((obj["metadata"]["name"], len(stub.requests)))  # requests sent so far
        return {"metadata": {"name": obj["metadata"]["name"]}}

    result = await client.list_all(resources.PODS, "default", limit=1, transform=slim)
    assert result["items"] == [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]
    assert seen == [("a", 1), ("b", 2)]  # page 1 was slimmed before page 2 was asked for


async def test_list_all_relists_in_full_when_continue_token_expires(stub: Stub, client: Client) -> None:
    stub.reply(
        200, {"kind": "PodList", "metadata": {"resourceVersion": "9", "continue": "c1"}, "items": [pod("a")]}
    )
    stub.reply(410, status(410, "Expired", "The provided continue parameter is too old"))
    stub.reply(200, {"kind": "PodList", "metadata": {"resourceVersion": "12"}, "items": [pod("a"), pod("b")]})
    result = await client.list_all(resources.PODS, "default", limit=1)
    assert [i["metadata"]["name"] for i in result["items"]] == ["a", "b"]
    assert result["metadata"]["resourceVersion"] == "12"
    assert "limit" not in stub.requests[2].query and "continue" not in stub.requests[2].query


async def test_list_all_first_page_gone_raises(stub: Stub, client: Client) -> None:
    stub.reply(410, status(410, "Expired", "too old resource version"))
    with pytest.raises(Gone):
        await client.list_all(resources.PODS, "default", limit=1, resource_version="3")


async def test_request_timeout_is_a_transport_error(stub: Stub) -> None:
    async def never(request: web.Request) -> web.StreamResponse:
        import asyncio

        await asyncio.Event().wait()
        raise AssertionError

    stub.handler = never
    async with Client(ClientConfig(host=stub.url, timeout=0.2)) as c:
        with pytest.raises(TransportError, match="GET"):
            await c.get(resources.PODS, "a", "ns")


async def test_unreachable_server_is_a_transport_error() -> None:
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens here now
    async with Client(ClientConfig(host=f"http://127.0.0.1:{port}")) as c:
        with pytest.raises(TransportError, match=f"127.0.0.1:{port}"):
            await c.get(resources.PODS, "a", "ns")
