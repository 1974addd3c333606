"""Kubernetes 1.36's ``scheduling.k8s.io/v1alpha2`` Workload and PodGroup, as kube-apiserver serves them.

The built-in server once served these through CRD stand-ins, which returned the objects as sent;
a real server defaults fields, adds a finalizer and validates. Each expected answer here was
read off kube-apiserver 1.36.2 started with ``--runtime-config=scheduling.k8s.io/v1alpha2=true
--feature-gates=GenericWorkload=true``, as both servers are started here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from controllers.batchscheduler.kubernetes_was import PODGROUPS, WORKLOADS
from kuberay_py.client import Client, Invalid
from kuberay_py.envtest import Environment
from tests import external_apis

API = "scheduling.k8s.io/v1alpha2"
GANG = {"gang": {"minCount": 3}}
CONSTRAINTS = {"topologyConstraints": [{"topologyKey": "topology.kubernetes.io/rack"}]}


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def env() -> AsyncIterator[Environment]:
    async with external_apis.environment("kubernetes-was", kuberay_crds=False) as e:
        yield e


@pytest_asyncio.fixture(loop_scope="session")
async def client_ns(env: Environment) -> AsyncIterator[tuple[Client, str]]:
    ns = await env.create_namespace(generate_name="sched-")
    client = env.new_client()
    try:
        yield client, ns
    finally:
        for group in (await client.list(PODGROUPS, ns))["items"]:  # only a controller drops it
            group["metadata"]["finalizers"] = []
            await client.update(PODGROUPS, group)
        await client.close()
        await env.delete_namespace(ns)


def _workload(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "Workload", "metadata": {"name": name}, "spec": spec}


def _pod_group(name: str, spec: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"apiVersion": API, "kind": "PodGroup", "metadata": {"name": name}, "spec": spec, **extra}


async def test_what_the_server_fills_in(client_ns: tuple[Client, str]) -> None:
    client, ns = client_ns
    template = {"name": "cluster", "schedulingPolicy": GANG, "schedulingConstraints": CONSTRAINTS}
    workload = await client.create(WORKLOADS, _workload("w", {"podGroupTemplates": [template]}), ns)
    # No omitempty, and dropped while the TopologyAwareWorkloadScheduling gate is off.
    assert workload["spec"] == {
        "podGroupTemplates": [{"name": "cluster", "schedulingPolicy": GANG, "schedulingConstraints": None}]
    }
    assert "generation" not in workload["metadata"] and "status" not in workload
    sent = _pod_group("p", {"schedulingPolicy": GANG, "schedulingConstraints": CONSTRAINTS}, status={"x": 1})
    group = await client.create(PODGROUPS, sent, ns)
    assert group["spec"] == {"podGroupTemplateRef": None, "schedulingPolicy": GANG, "disruptionMode": "Pod"}
    assert group["status"] == {}
    assert group["metadata"]["finalizers"] == ["scheduling.k8s.io/podgroup-protection"]
    assert "generation" not in group["metadata"]
    # Nothing but kube-controller-manager removes the protection finalizer.
    await client.delete(PODGROUPS, "p", ns)
    held = await client.get(PODGROUPS, "p", ns)
    assert held["metadata"]["deletionTimestamp"]


@pytest.mark.parametrize(
    ("kind", "body", "message"),
    [
        (
            "Workload",
            _workload("w3", {}),
            'Workload.scheduling.k8s.io "w3" is invalid: spec.podGroupTemplates: Required value',
        ),
        (
            "PodGroup",
            _pod_group("p2", {"podGroupTemplateRef": {}, "schedulingPolicy": GANG}),
            'PodGroup.scheduling.k8s.io "p2" is invalid: spec.podGroupTemplateRef: Invalid value: "": '
            "must specify one of: `workload`",
        ),
        (
            "PodGroup",
            _pod_group("p3", {"schedulingPolicy": {"gang": {"minCount": 0}}}),
            'PodGroup.scheduling.k8s.io "p3" is invalid: spec.schedulingPolicy.gang.minCount: Required value',
        ),
    ],
)
async def test_invalid_objects(
    client_ns: tuple[Client, str], kind: str, body: dict[str, Any], message: str
) -> None:
    client, ns = client_ns
    with pytest.raises(Invalid) as refused:
        await client.create(WORKLOADS if kind == "Workload" else PODGROUPS, body, ns)
    assert refused.value.message == message


async def test_the_scheduling_policy_is_immutable(client_ns: tuple[Client, str]) -> None:
    client, ns = client_ns
    group = await client.create(PODGROUPS, _pod_group("fixed", {"schedulingPolicy": GANG}), ns)
    group["spec"]["schedulingPolicy"] = {"gang": {"minCount": 4}}
    with pytest.raises(Invalid) as refused:
        await client.update(PODGROUPS, group)
    assert refused.value.message == (
        'PodGroup.scheduling.k8s.io "fixed" is invalid: spec.schedulingPolicy: Invalid value: null: '
        "field is immutable"
    )


async def test_discovery(client_ns: tuple[Client, str]) -> None:
    client, _ = client_ns
    doc = await client.request("GET", f"/apis/{API}")
    assert [(r["name"], r["kind"], r["namespaced"], sorted(r["verbs"])) for r in doc["resources"]] == [
        ("podgroups", "PodGroup", True, sorted(_ALL_VERBS)),
        ("podgroups/status", "PodGroup", True, ["get", "patch", "update"]),
        ("workloads", "Workload", True, sorted(_ALL_VERBS)),
    ]


_ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
