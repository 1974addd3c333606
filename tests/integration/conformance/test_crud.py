"""Create/get/update semantics: server-set metadata, optimistic concurrency, Status errors."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client as k
from kubernetes_asyncio.client.rest import ApiException

from .helpers import assert_status, configmap, pod


async def test_create_sets_server_metadata(core: k.CoreV1Api, namespace: str) -> None:
    created = await core.create_namespaced_config_map(namespace, configmap("a", {"k": "v"}))
    meta = created.metadata
    assert meta.uid and meta.creation_timestamp is not None
    assert int(meta.resource_version) > 0
    got = await core.read_namespaced_config_map("a", namespace)
    assert got.metadata.uid == meta.uid
    assert got.data == {"k": "v"}


async def test_resource_versions_increase_across_kinds(core: k.CoreV1Api, namespace: str) -> None:
    a = await core.create_namespaced_config_map(namespace, configmap("rv-a"))
    b = await core.create_namespaced_secret(
        namespace, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "rv-b"}}
    )
    c = await core.create_namespaced_config_map(namespace, configmap("rv-c"))
    assert (
        int(a.metadata.resource_version) < int(b.metadata.resource_version) < int(c.metadata.resource_version)
    )


async def test_generate_name(core: k.CoreV1Api, namespace: str) -> None:
    body = configmap("")
    body["metadata"] = {"generateName": "gen-"}
    created = await core.create_namespaced_config_map(namespace, body)
    assert created.metadata.name.startswith("gen-")
    assert len(created.metadata.name) == len("gen-") + 5


async def test_create_existing_is_already_exists(core: k.CoreV1Api, namespace: str) -> None:
    await core.create_namespaced_config_map(namespace, configmap("dup"))
    with pytest.raises(ApiException) as e:
        await core.create_namespaced_config_map(namespace, configmap("dup"))
    status = assert_status(e.value, 409, "AlreadyExists")
    assert status["details"] == {"name": "dup", "kind": "configmaps"}
    assert status["message"] == 'configmaps "dup" already exists'


async def test_get_missing_is_not_found(core: k.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as e:
        await core.read_namespaced_pod("nope", namespace)
    status = assert_status(e.value, 404, "NotFound")
    assert status["message"] == 'pods "nope" not found'
    assert status["details"] == {"name": "nope", "kind": "pods"}


async def test_stale_update_is_conflict(core: k.CoreV1Api, namespace: str) -> None:
    first = await core.create_namespaced_config_map(namespace, configmap("cas", {"n": "0"}))
    stale_rv = first.metadata.resource_version
    body = configmap("cas", {"n": "1"})
    body["metadata"]["resourceVersion"] = stale_rv
    updated = await core.replace_namespaced_config_map("cas", namespace, body)
    assert updated.metadata.resource_version != stale_rv
    body["data"] = {"n": "2"}
    with pytest.raises(ApiException) as e:
        await core.replace_namespaced_config_map("cas", namespace, body)
    status = assert_status(e.value, 409, "Conflict")
    assert "the object has been modified" in status["message"]
    assert (await core.read_namespaced_config_map("cas", namespace)).data == {"n": "1"}


async def test_update_missing_is_not_found(core: k.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as e:
        await core.replace_namespaced_config_map("ghost", namespace, configmap("ghost"))
    assert_status(e.value, 404, "NotFound")


async def test_noop_update_keeps_resource_version(core: k.CoreV1Api, namespace: str) -> None:
    created = await core.create_namespaced_config_map(namespace, configmap("same", {"a": "1"}))
    body = configmap("same", {"a": "1"})
    body["metadata"]["resourceVersion"] = created.metadata.resource_version
    again = await core.replace_namespaced_config_map("same", namespace, body)
    assert again.metadata.resource_version == created.metadata.resource_version


async def test_create_in_missing_namespace_is_not_found(core: k.CoreV1Api) -> None:
    with pytest.raises(ApiException) as e:
        await core.create_namespaced_config_map("no-such-namespace-xyz", configmap("x"))
    status = assert_status(e.value, 404, "NotFound")
    assert status["message"] == 'namespaces "no-such-namespace-xyz" not found'


async def test_pod_defaults_and_pending_status(core: k.CoreV1Api, namespace: str) -> None:
    created = await core.create_namespaced_pod(namespace, pod("p"))
    assert created.status.phase == "Pending"
    assert created.spec.restart_policy == "Always"
    assert created.spec.dns_policy == "ClusterFirst"
    assert created.spec.termination_grace_period_seconds == 30
    assert created.spec.containers[0].termination_message_path == "/dev/termination-log"
    assert created.spec.containers[0].image_pull_policy == "IfNotPresent"


async def test_service_gets_cluster_ip(core: k.CoreV1Api, namespace: str) -> None:
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
    }
    created = await core.create_namespaced_service(namespace, svc)
    assert created.spec.cluster_ip and created.spec.cluster_ip.startswith("10.0.")
    assert created.spec.type == "ClusterIP"
    assert created.spec.ports[0].protocol == "TCP"
    assert created.spec.ports[0].target_port == 80


async def test_update_with_another_uid_is_conflict(core: k.CoreV1Api, namespace: str) -> None:
    await core.create_namespaced_config_map(namespace, configmap("uid"))
    body = configmap("uid", {"a": "1"})
    body["metadata"]["uid"] = "00000000-0000-0000-0000-000000000000"
    with pytest.raises(ApiException) as e:
        await core.replace_namespaced_config_map("uid", namespace, body)
    status = assert_status(e.value, 409, "Conflict")
    assert "Precondition failed: UID in precondition" in status["message"]
