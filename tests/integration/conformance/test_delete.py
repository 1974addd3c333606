"""DELETE: finalizers, propagation policies, deletecollection, graceful Pods, namespaces."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client as k
from kubernetes_asyncio.client.rest import ApiException

from kuberay_py.envtest import Environment

from .helpers import assert_status, configmap, pod

MERGE = "application/merge-patch+json"


async def test_finalizers_keep_object_until_removed(core: k.CoreV1Api, namespace: str) -> None:
    body = configmap("fin")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    await core.create_namespaced_config_map(namespace, body)
    await core.delete_namespaced_config_map("fin", namespace)
    held = await core.read_namespaced_config_map("fin", namespace)
    assert held.metadata.deletion_timestamp is not None
    assert held.metadata.finalizers == ["example.com/hold"]
    with pytest.raises(ApiException) as e:
        await core.patch_namespaced_config_map(
            "fin",
            namespace,
            {"metadata": {"finalizers": ["example.com/hold", "example.com/new"]}},
            _content_type=MERGE,
        )
    assert_status(e.value, 422, "Invalid")
    await core.patch_namespaced_config_map(
        "fin", namespace, {"metadata": {"finalizers": None}}, _content_type=MERGE
    )
    with pytest.raises(ApiException) as e:
        await core.read_namespaced_config_map("fin", namespace)
    assert_status(e.value, 404, "NotFound")


async def test_delete_returns_status_or_object(core: k.CoreV1Api, namespace: str) -> None:
    await core.create_namespaced_config_map(namespace, configmap("gone"))
    resp = await core.delete_namespaced_config_map("gone", namespace, _preload_content=False)
    body = await resp.json()
    assert body["kind"] == "Status" and body["status"] == "Success"
    assert body["details"]["name"] == "gone" and body["details"]["kind"] == "configmaps"
    with pytest.raises(ApiException) as e:
        await core.delete_namespaced_config_map("gone", namespace)
    assert_status(e.value, 404, "NotFound")


async def test_delete_preconditions(core: k.CoreV1Api, namespace: str) -> None:
    cm = await core.create_namespaced_config_map(namespace, configmap("pre"))
    with pytest.raises(ApiException) as e:
        await core.delete_namespaced_config_map(
            "pre", namespace, body={"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}}
        )
    assert_status(e.value, 409, "Conflict")
    await core.delete_namespaced_config_map(
        "pre", namespace, body={"preconditions": {"uid": cm.metadata.uid}}
    )


@pytest.mark.parametrize(
    ("policy", "finalizer"), [("Foreground", "foregroundDeletion"), ("Orphan", "orphan")]
)
async def test_propagation_policy_finalizers(
    core: k.CoreV1Api, namespace: str, policy: str, finalizer: str
) -> None:
    body = configmap(f"prop-{finalizer.lower()}")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    name = body["metadata"]["name"]
    await core.create_namespaced_config_map(namespace, body)
    await core.delete_namespaced_config_map(name, namespace, propagation_policy=policy)
    held = await core.read_namespaced_config_map(name, namespace)
    assert finalizer in held.metadata.finalizers
    assert held.metadata.deletion_timestamp is not None
    await core.patch_namespaced_config_map(
        name, namespace, {"metadata": {"finalizers": None}}, _content_type=MERGE
    )


async def test_bad_propagation_policy_is_invalid(core: k.CoreV1Api, namespace: str) -> None:
    await core.create_namespaced_config_map(namespace, configmap("badprop"))
    with pytest.raises(ApiException) as e:
        await core.delete_namespaced_config_map("badprop", namespace, propagation_policy="Sideways")
    assert_status(e.value, 422, "Invalid")


async def test_delete_collection_with_selector(core: k.CoreV1Api, namespace: str) -> None:
    for name, team in (("x1", "a"), ("x2", "a"), ("x3", "b")):
        await core.create_namespaced_config_map(namespace, configmap(name, labels={"team": team}))
    await core.delete_collection_namespaced_config_map(namespace, label_selector="team=a")
    left = await core.list_namespaced_config_map(namespace)
    assert [i.metadata.name for i in left.items] == ["x3"]


async def test_unscheduled_pod_is_deleted_at_once(core: k.CoreV1Api, namespace: str) -> None:
    await core.create_namespaced_pod(namespace, pod("unsched"))
    await core.delete_namespaced_pod("unsched", namespace)
    with pytest.raises(ApiException) as e:
        await core.read_namespaced_pod("unsched", namespace)
    assert_status(e.value, 404, "NotFound")


async def test_scheduled_pod_waits_for_grace_period(core: k.CoreV1Api, namespace: str) -> None:
    await core.create_namespaced_pod(
        namespace, pod("bound", nodeName="node-1", terminationGracePeriodSeconds=45)
    )
    out = await core.delete_namespaced_pod("bound", namespace)
    assert out.metadata.deletion_timestamp is not None
    held = await core.read_namespaced_pod("bound", namespace)
    assert held.metadata.deletion_grace_period_seconds == 45
    await core.delete_namespaced_pod("bound", namespace, grace_period_seconds=0)
    with pytest.raises(ApiException) as e:
        await core.read_namespaced_pod("bound", namespace)
    assert_status(e.value, 404, "NotFound")


async def test_namespace_deletion_terminates_and_forbids_new_content(
    core: k.CoreV1Api, envtest: Environment
) -> None:
    ns = await envtest.create_namespace(generate_name="term-")
    inside = configmap("inside")
    inside["metadata"]["finalizers"] = ["example.com/hold"]  # keeps the namespace Terminating
    await core.create_namespaced_config_map(ns, inside)
    await core.delete_namespace(ns)
    assert (await core.read_namespace(ns)).status.phase == "Terminating"
    with pytest.raises(ApiException) as e:
        await core.create_namespaced_config_map(ns, configmap("late"))
    status = assert_status(e.value, 403, "Forbidden")
    assert "because it is being terminated" in status["message"]
    await core.patch_namespaced_config_map(
        "inside", ns, {"metadata": {"finalizers": None}}, _content_type=MERGE
    )


@pytest.mark.builtin_only(
    reason="the built-in server empties and removes a deleted namespace itself; kube-apiserver leaves that "
    "to kube-controller-manager, which envtest does not run"
)
async def test_namespace_deletion_completes_in_builtin_server(
    core: k.CoreV1Api, envtest: Environment
) -> None:
    """Real envtest has no namespace controller (deletion never finishes); the built-in server does."""
    assert envtest.server is not None
    ns = await envtest.create_namespace(generate_name="done-")
    held = configmap("held")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    await core.create_namespaced_config_map(ns, held)
    await core.create_namespaced_config_map(ns, configmap("free"))
    await core.delete_namespace(ns)
    await envtest.server.wait_idle()
    assert [i.metadata.name for i in (await core.list_namespaced_config_map(ns)).items] == ["held"]
    assert (await core.read_namespace(ns)).status.phase == "Terminating"
    await core.patch_namespaced_config_map(
        "held", ns, {"metadata": {"finalizers": None}}, _content_type=MERGE
    )
    await envtest.server.wait_idle()
    with pytest.raises(ApiException) as e:
        await core.read_namespace(ns)
    assert_status(e.value, 404, "NotFound")


async def test_default_namespace_may_not_be_deleted(core: k.CoreV1Api) -> None:
    with pytest.raises(ApiException) as e:
        await core.delete_namespace("default")
    status = assert_status(e.value, 403, "Forbidden")
    assert "this namespace may not be deleted" in status["message"]
