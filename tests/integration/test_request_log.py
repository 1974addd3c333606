"""``Environment.request_log``: one record per request, on the built-in server and on a real
kube-apiserver (its audit log), forgetting what came before ``clear()`` and what an earlier
Environment asked a reused control plane."""

from __future__ import annotations

from typing import Any

import pytest

from kuberay_py.client import Client, NotFound
from kuberay_py.client import resources as r
from kuberay_py.envtest import Environment
from kuberay_py.envtest.apiserver.faults import RequestRecord
from kuberay_py.envtest.reuse import ControlPlanePool


def _configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}


def _of(records: list[RequestRecord], resource: str) -> list[tuple[str, str, str | None, str, int]]:
    return [(x.verb, x.method, x.namespace, x.name, x.status) for x in records if x.resource == resource]


async def test_a_record_per_request_with_verb_resource_namespace_name_status_and_user(
    k8s: Client, envtest: Environment, namespace: str
) -> None:
    log = envtest.request_log
    await log.clear()
    await k8s.create(r.CONFIGMAPS, _configmap("c1"), namespace)
    await k8s.get(r.CONFIGMAPS, "c1", namespace)
    await k8s.list(r.CONFIGMAPS, namespace)
    await k8s.patch(r.CONFIGMAPS, "c1", {"data": {"a": "b"}}, namespace)
    await k8s.update(r.CONFIGMAPS, await k8s.get(r.CONFIGMAPS, "c1", namespace))
    await k8s.delete(r.CONFIGMAPS, "c1", namespace)
    with pytest.raises(NotFound):
        await k8s.get(r.CONFIGMAPS, "c1", namespace)
    async for _ in k8s.watch(r.CONFIGMAPS, namespace, timeout_seconds=1):
        pass
    records = await log.records()

    assert _of(records, "configmaps") == [
        ("create", "POST", namespace, "c1", 201),  # the name from the body, as kube-apiserver audits it
        ("get", "GET", namespace, "c1", 200),
        ("list", "GET", namespace, "", 200),
        ("patch", "PATCH", namespace, "c1", 200),
        ("get", "GET", namespace, "c1", 200),
        ("update", "PUT", namespace, "c1", 200),
        ("delete", "DELETE", namespace, "c1", 200),
        ("get", "GET", namespace, "c1", 404),
        ("watch", "GET", namespace, "", 200),
    ]
    mine = [x for x in records if x.resource == "configmaps"]
    assert {x.user for x in mine} == {"envtest-admin"}
    assert mine[1].path == f"/api/v1/namespaces/{namespace}/configmaps/c1"
    # kube-apiserver's RequestInfo: a Namespace's own requests are in that namespace
    await k8s.get(r.NAMESPACES, namespace)
    assert _of(await log.records(), "namespaces")[-1] == ("get", "GET", namespace, namespace, 200)


async def test_clear_forgets_every_request_before_it(
    k8s: Client, envtest: Environment, namespace: str
) -> None:
    log = envtest.request_log
    await k8s.create(r.CONFIGMAPS, _configmap("before"), namespace)
    assert ("create", "POST", namespace, "before", 201) in _of(await log.records(), "configmaps")
    await log.clear()
    assert _of(await log.records(), "configmaps") == []
    await k8s.create(r.CONFIGMAPS, _configmap("after"), namespace)
    await k8s.get(r.CONFIGMAPS, "after", namespace)
    assert _of(await log.records(), "configmaps") == [
        ("create", "POST", namespace, "after", 201),
        ("get", "GET", namespace, "after", 200),
    ]


async def test_an_environment_on_a_reused_control_plane_sees_none_of_the_earlier_requests(
    own_pool: ControlPlanePool,
) -> None:
    async with Environment() as first, first.new_client() as client:
        ns = await first.create_namespace(generate_name="earlier-")
        await client.create(r.CONFIGMAPS, _configmap("old"), ns)
        watch = client.watch(r.CONFIGMAPS, ns, timeout_seconds=60)
        await anext(watch)  # a watch still open when the Environment stops
        assert _of(await first.request_log.records(), "configmaps")[0][:3] == ("create", "POST", ns)
        plane = first.control_plane
    async with Environment() as second, second.new_client() as client:
        assert second.control_plane is plane  # None == None on the built-in server
        if second.real:
            assert own_pool.reused == 1
        await client.list(r.CONFIGMAPS, "default")
        records = await second.request_log.records()
    assert [x for x in records if x.namespace == ns] == []
    assert _of(records, "configmaps") == [("list", "GET", "default", "", 200)]
