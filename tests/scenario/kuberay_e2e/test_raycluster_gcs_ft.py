"""Mirrors of KubeRay v1.7.0 ``test/e2e/raycluster_gcs_ft_test.go``, the operator's part:
TestGcsFaultToleranceOptions (``No_Redis_Password``, ``Long_RayCluster_Name``) and
TestGcsFaultToleranceAnnotations (``GCS_FT_without_redis_password``,
``GCS_FT_with_redis_password_in_ray_start_params``).

``DeployRedis`` is a fake Redis at ``redis:6379`` in the test's namespace
(:mod:`controllers.raysim.redis`): the fake head's GCS writes its storage namespace's keys there,
and the operator's Redis cleanup Job runs its program against it with Ray 2.60's argument checks.
Go's deferred ``checkRedisDBSize`` (``DBSIZE`` 0 within 30 s of the RayCluster's deletion) is the
last step; the keys are asserted present first, so an empty Redis cannot pass it.
"""

from __future__ import annotations

from typing import Any

import pytest

from controllers.constants import RAYCLUSTERS
from controllers.raysim.redis import FakeRedis

from .conftest import E2E, eventually, has_condition, ray_cluster_spec

REDIS_ADDRESS = "redis:6379"
REDIS_PASSWORD = "5241590000000000"


def env_names(pod: dict[str, Any]) -> set[str]:
    return {e["name"] for e in pod["spec"]["containers"][0].get("env") or []}


async def provisioned_head(sc: E2E, name: str) -> dict[str, Any]:
    cluster = await sc.until_cluster(
        name, has_condition("RayClusterProvisioned", "True", "AllPodRunningAndReadyFirstTime"), "provisioned"
    )
    (head,) = [
        p
        for p in await sc.pods(name, "head")
        if p["metadata"]["name"] == cluster["status"]["head"]["podName"]
    ]
    return head


async def delete_and_check_redis(sc: E2E, name: str, redis: FakeRedis) -> None:
    assert redis.dbsize() > 0  # the head's GCS wrote its keys
    await sc.client.delete(RAYCLUSTERS, name, sc.namespace)

    async def empty() -> bool:
        return redis.dbsize() == 0

    await eventually(empty, "Redis DBSIZE 0 after the RayCluster's deletion", 30.0)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("raycluster-gcsft", id="No_Redis_Password"),
        pytest.param("raycluster-with-a-very-long-name-exceeding-k8s-limit", id="Long_RayCluster_Name"),
    ],
)
async def test_gcs_fault_tolerance_options(e2e: E2E, name: str) -> None:
    sc = e2e
    redis = sc.runtime.redis.deploy(sc.namespace, REDIS_ADDRESS)
    spec = ray_cluster_spec()
    spec["gcsFaultToleranceOptions"] = {"redisAddress": REDIS_ADDRESS}
    body = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": name}, "spec": spec}
    await sc.client.create(RAYCLUSTERS, body, sc.namespace)
    head = await provisioned_head(sc, name)
    env = env_names(head)
    assert {"RAY_REDIS_ADDRESS", "RAY_external_storage_namespace"} <= env
    assert "REDIS_PASSWORD" not in env
    await delete_and_check_redis(sc, name, redis)


@pytest.mark.parametrize(
    "password_in_ray_start_params",
    [
        pytest.param("", id="GCS_FT_without_redis_password"),
        pytest.param(REDIS_PASSWORD, id="GCS_FT_with_redis_password_in_ray_start_params"),
    ],
)
async def test_gcs_fault_tolerance_annotations(e2e: E2E, password_in_ray_start_params: str) -> None:
    sc = e2e
    name = "raycluster-gcsft"
    redis = sc.runtime.redis.deploy(sc.namespace, REDIS_ADDRESS, password_in_ray_start_params)
    spec = ray_cluster_spec()
    del spec["workerGroupSpecs"]  # RayClusterSpecWith(...): a head only
    head_group = spec["headGroupSpec"]
    head_group["template"]["spec"]["containers"][0]["env"] = [
        {"name": "RAY_REDIS_ADDRESS", "value": REDIS_ADDRESS}
    ]
    if password_in_ray_start_params:
        head_group["rayStartParams"]["redis-password"] = password_in_ray_start_params
    body = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "annotations": {"ray.io/ft-enabled": "true"}},
        "spec": spec,
    }
    await sc.client.create(RAYCLUSTERS, body, sc.namespace)
    head = await provisioned_head(sc, name)
    env = env_names(head)
    assert {"RAY_REDIS_ADDRESS", "RAY_external_storage_namespace"} <= env
    assert ("REDIS_PASSWORD" in env) == bool(password_in_ray_start_params)
    await delete_and_check_redis(sc, name, redis)
