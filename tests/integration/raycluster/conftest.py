"""An envtest API server (no kubelet) plus the real Manager running the RayCluster controller.

As in KubeRay's envtest suite, nothing moves Pods along: tests set Pod phases and conditions by
hand through the status subresource and watch the controller react, asserting on API objects.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest_asyncio

from controllers import constants as C
from controllers.api.gates import ClusterGates
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.reconciler import RayClusterReconciler
from controllers.raycluster.setup import setup
from kuberay_py.client import Client
from kuberay_py.client.resources import PODS
from kuberay_py.envtest import Environment
from kuberay_py.manager import Manager
from tests.in_loop_manager import in_loop_manager, running_in_loop, start_in_loop, stop_in_loop
from tests.live import update_live

ROOT = Path(__file__).resolve().parents[3]
CRDS = str(ROOT / "config" / "crd" / "bases")
WAIT = 20.0  # bound for eventual consistency on a loaded 2-core machine, not a performance assertion


@pytest_asyncio.fixture(loop_scope="session")
async def rc_client(crd_env: Environment) -> AsyncIterator[Client]:
    client = crd_env.new_client()
    try:
        yield client
    finally:
        await client.close()


@pytest_asyncio.fixture(loop_scope="session")
async def rc_namespace(crd_env: Environment) -> AsyncIterator[str]:
    ns = await crd_env.create_namespace(generate_name="rc-")
    try:
        yield ns
    finally:
        await crd_env.delete_namespace(ns)


class Operator:
    def __init__(self, manager: Manager, reconciler: RayClusterReconciler) -> None:
        self.manager = manager
        self.reconciler = reconciler


@pytest_asyncio.fixture(loop_scope="session")
async def operator(crd_env: Environment, rc_namespace: str) -> AsyncIterator[Operator]:
    manager = in_loop_manager(crd_env.client_config, namespaces=[rc_namespace])
    reconciler = setup(
        manager, max_concurrent_reconciles=4, options=RayClusterOptions.from_env({}), resync_period=300.0
    )
    async with running_in_loop(manager):
        yield Operator(manager, reconciler)


def sample_cluster(name: str, namespace: str, *, replicas: int = 3, max_replicas: int = 4) -> dict[str, Any]:
    """KubeRay's ``rayClusterTemplate`` from its envtest suite."""
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {
                    "spec": {
                        "containers": [
                            {"name": "ray-head", "image": "rayproject/ray:2.52.0"},
                            {"name": "fluentbit", "image": "fluent/fluent-bit:1.9.6"},
                        ]
                    }
                },
            },
            "workerGroupSpecs": [
                {
                    "replicas": replicas,
                    "minReplicas": 0,
                    "maxReplicas": max_replicas,
                    "groupName": "small-group",
                    "rayStartParams": {},
                    "template": {
                        "spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.52.0"}]}
                    },
                }
            ],
        },
    }


async def list_pods(client: Client, ns: str, **labels: str) -> list[dict[str, Any]]:
    selector = ",".join(f"{k}={v}" for k, v in labels.items())
    items = (await client.list(PODS, ns, label_selector=selector))["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


async def head_pods(client: Client, ns: str, cluster: str) -> list[dict[str, Any]]:
    return await list_pods(
        client, ns, **{C.RAY_CLUSTER_LABEL_KEY: cluster, C.RAY_NODE_TYPE_LABEL_KEY: "head"}
    )


async def worker_pods(
    client: Client, ns: str, cluster: str, group: str = "small-group"
) -> list[dict[str, Any]]:
    return await list_pods(
        client,
        ns,
        **{
            C.RAY_CLUSTER_LABEL_KEY: cluster,
            C.RAY_NODE_GROUP_LABEL_KEY: group,
            C.RAY_NODE_TYPE_LABEL_KEY: "worker",
        },
    )


async def set_pod_status(
    client: Client, pod: dict[str, Any], *, ready: bool = True, phase: str = "Running", ip: str | None = None
) -> None:
    """What kubelet would write (envtest has none)."""
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    if ip:
        status["podIP"] = ip

    def set_status(fresh: dict[str, Any]) -> None:
        fresh["status"] = copy.deepcopy(status)

    meta = pod["metadata"]
    await update_live(client, PODS, meta["name"], meta["namespace"], set_status, status=True)


async def all_running(client: Client, ns: str, cluster: str, ip_prefix: str = "10.1.0.") -> int:
    pods = await list_pods(client, ns, **{C.RAY_CLUSTER_LABEL_KEY: cluster})
    for i, pod in enumerate(pods):
        await set_pod_status(client, pod, ip=f"{ip_prefix}{i + 1}")
    return len(pods)


@pytest_asyncio.fixture(loop_scope="session")
async def start_gated(
    crd_env: Environment, rc_namespace: str
) -> AsyncIterator[Callable[[ClusterGates], None]]:
    """``start_gated(gates)`` runs the RayCluster controller with those alpha gates in the test's
    namespace (the gate decides which controllers exist, so each test starts its own)."""
    started: list[tuple[Manager, asyncio.Task[None]]] = []

    def run(gates: ClusterGates) -> None:
        manager = in_loop_manager(crd_env.client_config, namespaces=[rc_namespace])
        setup(manager, options=dataclasses.replace(RayClusterOptions.from_env({}), gates=gates))
        started.append((manager, start_in_loop(manager)))

    try:
        yield run
    finally:
        for manager, task in started:
            await stop_in_loop(manager, task, check=True)
