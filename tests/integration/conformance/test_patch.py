"""PATCH: JSON merge, JSON patch, strategic merge (list merge keys), server-side apply."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client as k
from kubernetes_asyncio.client.rest import ApiException

from .conftest import WIDGET
from .helpers import assert_status, configmap, pod

MERGE = "application/merge-patch+json"
JSON = "application/json-patch+json"
SMP = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


async def test_merge_patch_sets_and_deletes(core: k.CoreV1Api, namespace: str) -> None:
    await core.create_namespaced_config_map(namespace, configmap("m", {"a": "1", "b": "2"}))
    out = await core.patch_namespaced_config_map(
        "m", namespace, {"data": {"a": None, "c": "3"}}, _content_type=MERGE
    )
    assert out.data == {"b": "2", "c": "3"}


async def test_json_patch_and_failed_test_op(core: k.CoreV1Api, namespace: str) -> None:
    await core.create_namespaced_config_map(namespace, configmap("j", {"a": "1"}))
    out = await core.patch_namespaced_config_map(
        "j", namespace, [{"op": "add", "path": "/data/b", "value": "2"}], _content_type=JSON
    )
    assert out.data == {"a": "1", "b": "2"}
    with pytest.raises(ApiException) as e:
        await core.patch_namespaced_config_map(
            "j", namespace, [{"op": "test", "path": "/data/a", "value": "nope"}], _content_type=JSON
        )
    status = assert_status(e.value, 422, "Invalid")
    assert status["message"] == "the server rejected our request due to an error in our request"
    with pytest.raises(ApiException) as e:
        await core.patch_namespaced_config_map(
            "j", namespace, [{"op": "remove", "path": "/data/missing"}], _content_type=JSON
        )
    assert_status(e.value, 422, "Invalid")
    assert (await core.read_namespaced_config_map("j", namespace)).data == {"a": "1", "b": "2"}


async def test_patch_with_stale_resource_version_conflicts(core: k.CoreV1Api, namespace: str) -> None:
    cm = await core.create_namespaced_config_map(namespace, configmap("prv"))
    await core.patch_namespaced_config_map("prv", namespace, {"data": {"x": "1"}}, _content_type=MERGE)
    with pytest.raises(ApiException) as e:
        await core.patch_namespaced_config_map(
            "prv",
            namespace,
            {"metadata": {"resourceVersion": cm.metadata.resource_version}, "data": {"x": "2"}},
            _content_type=MERGE,
        )
    assert_status(e.value, 409, "Conflict")


async def test_strategic_merge_uses_list_merge_keys(core: k.CoreV1Api, namespace: str) -> None:
    body = pod("smp")
    body["spec"]["containers"][0]["env"] = [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    body["spec"]["containers"].append({"name": "side", "image": "busybox:1.36"})
    body["metadata"]["finalizers"] = ["example.com/a"]
    await core.create_namespaced_pod(namespace, body)
    patch: dict[str, Any] = {
        "metadata": {"finalizers": ["example.com/b"]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    out = await core.patch_namespaced_pod("smp", namespace, patch, _content_type=SMP)
    # finalizers is a merge list (patchStrategy=merge); strategicpatch's mergeSortedSlice puts a
    # patched item the live list lacks before the live-only items: [a] + [b] -> [b, a]
    assert out.metadata.finalizers == ["example.com/b", "example.com/a"]
    # status sent through the main resource is dropped (podStrategy.PrepareForUpdate keeps old status)
    assert not any(c.type == "Ready" and c.status == "True" for c in (out.status.conditions or []))
    # container image is mutable: patching one container by name leaves the other alone
    out = await core.patch_namespaced_pod(
        "smp",
        namespace,
        {"spec": {"containers": [{"name": "side", "image": "busybox:1.37"}]}},
        _content_type=SMP,
    )
    images = {c.name: c.image for c in out.spec.containers}
    assert images == {"main": "busybox:1.36", "side": "busybox:1.37"}
    assert [e.name for e in out.spec.containers[0].env] == ["A", "B"]
    out = await core.patch_namespaced_pod(
        "smp",
        namespace,
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a"]}},
        _content_type=SMP,
    )
    assert out.metadata.finalizers == ["example.com/b"]
    await core.patch_namespaced_pod("smp", namespace, {"metadata": {"finalizers": None}}, _content_type=MERGE)


async def test_strategic_merge_on_status_conditions(core: k.CoreV1Api, namespace: str) -> None:
    await core.create_namespaced_pod(namespace, pod("cond"))
    await core.patch_namespaced_pod_status(
        "cond",
        namespace,
        {
            "status": {
                "conditions": [
                    {"type": "Ready", "status": "False"},
                    {"type": "Initialized", "status": "True"},
                ]
            }
        },
        _content_type=SMP,
    )
    out = await core.patch_namespaced_pod_status(
        "cond",
        namespace,
        {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        _content_type=SMP,
    )
    conds = {c.type: c.status for c in out.status.conditions}
    assert conds == {"Ready": "True", "Initialized": "True"}


async def test_strategic_merge_on_custom_resource_is_unsupported(
    custom: k.CustomObjectsApi, namespace: str, widget_crd: str
) -> None:
    g, v, p = WIDGET
    await custom.create_namespaced_custom_object(
        g,
        v,
        namespace,
        p,
        {"apiVersion": f"{g}/{v}", "kind": "Widget", "metadata": {"name": "s"}, "spec": {"size": 1}},
    )
    with pytest.raises(ApiException) as e:
        await custom.api_client.call_api(
            f"/apis/{g}/{v}/namespaces/{namespace}/{p}/s",
            "PATCH",
            header_params={"Content-Type": SMP, "Accept": "application/json"},
            body={"spec": {"size": 2}},
            auth_settings=["BearerToken"],
            response_types_map={200: "object"},
        )
    assert_status(e.value, 415, "UnsupportedMediaType")


async def test_server_side_apply_creates_then_merges(core: k.CoreV1Api, namespace: str) -> None:
    cfg = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"a": "1"}}
    created = await core.patch_namespaced_config_map(
        "ssa", namespace, cfg, _content_type=APPLY, field_manager="tester"
    )
    assert created.data == {"a": "1"}
    managers = [(m.manager, m.operation) for m in created.metadata.managed_fields]
    assert ("tester", "Apply") in managers
    cfg["data"] = {"a": "2"}
    out = await core.patch_namespaced_config_map(
        "ssa", namespace, cfg, _content_type=APPLY, field_manager="tester", force=True
    )
    assert out.data == {"a": "2"}


async def test_server_side_apply_requires_field_manager(core: k.CoreV1Api, namespace: str) -> None:
    cfg = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa-nofm"}, "data": {"a": "1"}}
    with pytest.raises(ApiException) as e:
        await core.patch_namespaced_config_map("ssa-nofm", namespace, cfg, _content_type=APPLY)
    status = assert_status(e.value, 422, "Invalid")
    assert status["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'
    )


async def test_pod_spec_is_mostly_immutable(core: k.CoreV1Api, namespace: str) -> None:
    await core.create_namespaced_pod(namespace, pod("imm"))
    with pytest.raises(ApiException) as e:
        await core.patch_namespaced_pod(
            "imm", namespace, {"spec": {"restartPolicy": "Never"}}, _content_type=MERGE
        )
    status = assert_status(e.value, 422, "Invalid")
    assert status["details"]["causes"][0]["field"] == "spec"


async def test_server_side_apply_conflicts_force_and_removal(core: k.CoreV1Api, namespace: str) -> None:
    def cfg(data: dict[str, str]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owned"}, "data": data}

    await core.patch_namespaced_config_map(
        "owned", namespace, cfg({"a": "1", "b": "1"}), _content_type=APPLY, field_manager="alice"
    )
    # bob applies a different value for a field alice owns: conflict
    with pytest.raises(ApiException) as e:
        await core.patch_namespaced_config_map(
            "owned", namespace, cfg({"a": "2"}), _content_type=APPLY, field_manager="bob"
        )
    status = assert_status(e.value, 409, "Conflict")
    assert status["message"].startswith("Apply failed with 1 conflict")
    assert [c["field"] for c in status["details"]["causes"]] == [".data.a"]
    # same value: shared ownership, no conflict
    await core.patch_namespaced_config_map(
        "owned", namespace, cfg({"b": "1", "c": "1"}), _content_type=APPLY, field_manager="bob"
    )
    # force takes the field over
    out = await core.patch_namespaced_config_map(
        "owned",
        namespace,
        cfg({"a": "2", "b": "1", "c": "1"}),
        _content_type=APPLY,
        field_manager="bob",
        force=True,
    )
    assert out.data == {"a": "2", "b": "1", "c": "1"}
    # alice stops applying a (now bob's) and b (shared): both stay; she still owns nothing else
    out = await core.patch_namespaced_config_map(
        "owned", namespace, cfg({}), _content_type=APPLY, field_manager="alice"
    )
    assert out.data == {"a": "2", "b": "1", "c": "1"}
    # bob stops applying c, which only he owns: it is removed
    out = await core.patch_namespaced_config_map(
        "owned", namespace, cfg({"a": "2", "b": "1"}), _content_type=APPLY, field_manager="bob"
    )
    assert out.data == {"a": "2", "b": "1"}


async def test_update_takes_ownership_from_apply(core: k.CoreV1Api, namespace: str) -> None:
    cfg = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "taken"}, "data": {"a": "1"}}
    await core.patch_namespaced_config_map(
        "taken", namespace, cfg, _content_type=APPLY, field_manager="alice"
    )
    await core.patch_namespaced_config_map(
        "taken", namespace, {"data": {"a": "2"}}, _content_type=MERGE, field_manager="editor"
    )
    # alice re-applies her old value: "editor" now owns data.a, so this conflicts
    with pytest.raises(ApiException) as e:
        await core.patch_namespaced_config_map(
            "taken", namespace, cfg, _content_type=APPLY, field_manager="alice"
        )
    status = assert_status(e.value, 409, "Conflict")
    assert 'conflict with "editor"' in status["details"]["causes"][0]["message"]


async def test_server_side_apply_merges_lists_by_key(core: k.CoreV1Api, namespace: str) -> None:
    def svc(ports: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "applied-svc"},
            "spec": {"selector": {"app": "x"}, "ports": ports},
        }

    http = {"name": "http", "port": 80}
    grpc = {"name": "grpc", "port": 9000}
    await core.patch_namespaced_service(
        "applied-svc", namespace, svc([http, grpc]), _content_type=APPLY, field_manager="owner"
    )
    # another writer adds a port of its own
    await core.patch_namespaced_service(
        "applied-svc",
        namespace,
        {"spec": {"ports": [{"name": "metrics", "port": 8080}]}},
        _content_type=SMP,
        field_manager="sidecar-injector",
    )
    # the owner drops grpc from its configuration: grpc goes, the other writer's port stays
    out = await core.patch_namespaced_service(
        "applied-svc", namespace, svc([http]), _content_type=APPLY, field_manager="owner"
    )
    assert sorted(p.name for p in out.spec.ports) == ["http", "metrics"]
