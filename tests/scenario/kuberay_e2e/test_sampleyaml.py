"""Mirrors of KubeRay v1.7.0 ``test/sampleyaml``: TestRayCluster/ray-cluster.sample.yaml and
TestRayJobInteractiveMode/ray-job.interactive-mode.yaml, on the vendored samples.

Not mirrored: ``SubmitJobsToAllPods`` execs ``python -c "import ray; ray.init()"`` in every Pod,
which needs a real Ray in a real container (the real-Ray tier covers Ray's own API).
"""

from __future__ import annotations

from typing import Any

import yaml

from controllers.constants import RAYCLUSTERS, RAYJOBS
from kuberay_py.client.resources import PODS
from tests.rayjob_harness import SAMPLES

from .conftest import E2E, condition, create_quota, eventually, has_condition, state_is


def _ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    ready = any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or [])
    return status.get("phase") == "Running" and ready


async def _check_pods(sc: E2E, cluster: str) -> None:
    """The sample checks: one ready head, every desired worker ready, desiredWorkerReplicas."""
    obj = await sc.cluster(cluster)
    desired = sum(g["replicas"] * g.get("numOfHosts", 1) for g in obj["spec"].get("workerGroupSpecs") or [])

    async def all_ready() -> bool:
        heads, workers = await sc.pods(cluster, "head"), await sc.pods(cluster, "worker")
        return len(heads) == 1 and len(workers) == desired and all(_ready(p) for p in heads + workers)

    await eventually(all_ready, f"{cluster}: head and {desired} workers ready")
    assert (await sc.cluster(cluster))["status"]["desiredWorkerReplicas"] == desired


async def test_ray_cluster__ray_cluster_sample_yaml(e2e: E2E) -> None:
    """sampleyaml/raycluster_test.go:TestRayCluster/"ray-cluster.sample.yaml": the sample comes
    up; then with a quota of zero Pods and every Pod deleted the head cannot come back, which
    the conditions report (Provisioned stays True: it records the first time)."""
    sc = e2e
    doc = yaml.safe_load((SAMPLES / "ray-cluster.sample.yaml").read_text())
    name = doc["metadata"]["name"]
    await sc.client.create(RAYCLUSTERS, doc, sc.namespace)
    await sc.until_cluster(
        name, has_condition("HeadPodReady", "True", "HeadPodRunningAndReady"), "head ready"
    )
    await sc.until_cluster(
        name, has_condition("RayClusterProvisioned", "True", "AllPodRunningAndReadyFirstTime"), "provisioned"
    )
    await sc.until_cluster(name, state_is("ready"), "Ready")
    await _check_pods(sc, name)
    await create_quota(sc, "quota", {"cpu": "0", "memory": "0G", "pods": "0"})
    for pod in (await sc.client.list(PODS, sc.namespace))["items"]:
        await sc.client.delete(PODS, pod["metadata"]["name"], sc.namespace)
    await sc.until_cluster(name, has_condition("HeadPodReady", "False", "HeadPodNotFound"), "head gone")
    await sc.until_cluster(
        name,
        has_condition("RayClusterProvisioned", "True", "AllPodRunningAndReadyFirstTime"),
        "still provisioned",
    )

    def head_refused(obj: dict[str, Any]) -> bool:
        cond = condition(obj, "ReplicaFailure")
        return cond.get("status") == "True" and cond.get("reason") == "FailedCreateHeadPod"

    await sc.until_cluster(name, head_refused, "ReplicaFailure: FailedCreateHeadPod")


async def test_ray_job_interactive_mode__ray_job_interactive_mode_yaml(e2e: E2E) -> None:
    """sampleyaml/rayjob_test.go:TestRayJobInteractiveMode/"ray-job.interactive-mode.yaml"."""
    sc = e2e
    doc = next(
        d
        for d in yaml.safe_load_all((SAMPLES / "ray-job.interactive-mode.yaml").read_text())
        if isinstance(d, dict) and d.get("kind") == "RayJob"
    )
    name = doc["metadata"]["name"]
    await sc.client.create(RAYJOBS, doc, sc.namespace)

    async def cluster_named() -> str:
        return str(((await sc.get(name)).get("status") or {}).get("rayClusterName") or "")

    cluster = await eventually(cluster_named, "rayClusterName set")
    await sc.until_cluster(cluster, state_is("ready"), "Ready")
    await _check_pods(sc, cluster)
