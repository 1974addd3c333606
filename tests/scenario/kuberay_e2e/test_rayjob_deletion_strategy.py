"""Mirrors of KubeRay v1.7.0 ``rayjob_deletion_strategy_test.go:TestDeletionStrategy``.

Each TTL runs on the RayJob controller's FakeClock: where Go waits ``Consistently`` for most of a
TTL, the test steps the clock to just before it and checks after a reconcile that saw that time;
then it steps past and waits for the deletion.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from controllers.constants import RAYCLUSTERS, RAYJOBS

from .conftest import (
    COUNTER_RUNTIME_ENV,
    E2E,
    SCRIPTS,
    e2e_rayjob,
    eventually,
    state_is,
    submitter_template,
)
from .rayjob_steps import until_succeeded


def _rule(policy: str, ttl: int, *, failed: bool = False) -> dict[str, Any]:
    cond: dict[str, Any] = {"ttlSeconds": ttl}
    cond["jobDeploymentStatus" if failed else "jobStatus"] = "Failed" if failed else "SUCCEEDED"
    return {"policy": policy, "condition": cond}


def _job(name: str, strategy: dict[str, Any], *, long_running: bool = False, **spec: Any) -> dict[str, Any]:
    spec.setdefault("shutdownAfterJobFinishes", False)
    if long_running:
        return e2e_rayjob(
            name,
            SCRIPTS["long_running"],
            deletionStrategy=strategy,
            submitterPodTemplate=submitter_template(),
            **spec,
        )
    return e2e_rayjob(
        name,
        SCRIPTS["counter"],
        runtimeEnvYAML=COUNTER_RUNTIME_ENV,
        deletionStrategy=strategy,
        submitterPodTemplate=submitter_template(),
        **spec,
    )


async def _completed(sc: E2E, doc: dict[str, Any]) -> str:
    """applyRayJobAndWaitForCompletion: SUCCEEDED and Complete; returns the cluster's name."""
    await sc.create(doc)
    done = await until_succeeded(sc, doc["metadata"]["name"])
    cluster = str(done["status"]["rayClusterName"])
    assert cluster
    return cluster


async def _deadline_failed(sc: E2E, doc: dict[str, Any]) -> str:
    """applyRayJobAndWaitForJobDeploymentStatusFailed: once running, activeDeadlineSeconds=1."""
    name = doc["metadata"]["name"]
    await sc.create(doc)
    await sc.until(name, {"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"})
    await sc.patch_spec(name, {"activeDeadlineSeconds": 1})
    await sc.advance(2, name)
    failed = await sc.until(
        name, {"jobDeploymentStatus": "Failed", "reason": "DeadlineExceeded", "jobStatus": "RUNNING"}
    )
    return str(failed["status"]["rayClusterName"])


async def _all_there(sc: E2E, name: str, cluster: str, *, workers: bool = True) -> None:
    await sc.get(name)
    await sc.cluster(cluster)
    assert await sc.pods(cluster, "head")
    if workers:
        assert await sc.pods(cluster, "worker")


async def _no_workers(sc: E2E, cluster: str) -> None:
    async def gone() -> bool:
        await sc.cluster(cluster)
        return not await sc.pods(cluster, "worker")

    await eventually(gone, f"{cluster}'s worker Pods deleted")


async def _check_delete_workers(sc: E2E, name: str, cluster: str, ttl: int) -> None:
    await sc.until_cluster(cluster, state_is("ready"), "Ready")
    await _all_there(sc, name, cluster)
    await sc.advance(ttl - 2, name)
    await _all_there(sc, name, cluster)
    await sc.advance(3, name)  # past the TTL
    await _no_workers(sc, cluster)
    await sc.advance(10, name)
    assert (await sc.cluster(cluster))["status"]["state"] == "ready"
    await _all_there(sc, name, cluster, workers=False)


async def _check_delete_cluster(sc: E2E, name: str, cluster: str, ttl: int) -> None:
    await sc.until_cluster(cluster, state_is("ready"), "Ready")
    await sc.advance(ttl + 1, name)
    await sc.gone(RAYCLUSTERS, cluster)
    await sc.get(name)


async def _check_delete_self(sc: E2E, name: str, cluster: str, ttl: int) -> None:
    await sc.advance(ttl + 1, name)
    await sc.gone(RAYJOBS, name)
    await sc.gone(RAYCLUSTERS, cluster)


async def _check_delete_none(sc: E2E, name: str, cluster: str, ttl: int) -> None:
    await sc.advance(ttl + 5, name)
    await _all_there(sc, name, cluster)


Check = Callable[[E2E, str, str, int], Awaitable[None]]
CHECKS: dict[str, Check] = {
    "DeleteWorkers": _check_delete_workers,
    "DeleteCluster": _check_delete_cluster,
    "DeleteSelf": _check_delete_self,
    "DeleteNone": _check_delete_none,
}
# Each policy, with the rest of KubeRay's subtest name as the case's id.
POLICIES = [
    pytest.param("DeleteWorkers", id="delete_workers_policy_should_delete_only_worker_pods"),
    pytest.param("DeleteCluster", id="delete_cluster_policy_should_delete_entire_cluster"),
    pytest.param("DeleteSelf", id="delete_self_policy_should_delete_ray_job_and_cluster"),
    pytest.param("DeleteNone", id="delete_none_policy_should_preserve_all_resources"),
]
TTL = 10
SUCCEEDED_TTL = {"DeleteNone": 5}  # KubeRay's one other TTL


def _kebab(policy: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", policy).lower()


@pytest.mark.parametrize("policy", POLICIES)
async def test_deletion_strategy__deletion_rules_with(e2e: E2E, policy: str) -> None:
    """TestDeletionStrategy/"DeletionRules with <policy> policy should ...": one rule on
    jobStatus SUCCEEDED (e.g. ``delete_workers_policy_should_delete_only_worker_pods`` is
    "DeletionRules with DeleteWorkers policy should delete only worker pods")."""
    name = f"{_kebab(policy)}-test"
    ttl = SUCCEEDED_TTL.get(policy, TTL)
    doc = _job(name, {"deletionRules": [_rule(policy, ttl)]})
    await CHECKS[policy](e2e, name, await _completed(e2e, doc), ttl)


async def test_deletion_strategy__multi_stage_deletion_should_execute_in_ttl_order_workers_cluster_self(
    e2e: E2E,
) -> None:
    """TestDeletionStrategy/"Multi-stage deletion should execute in TTL order: Workers->Cluster->Self"."""
    sc = e2e
    name = "multi-stage-test"
    rules = [_rule("DeleteWorkers", 15), _rule("DeleteCluster", 35), _rule("DeleteSelf", 55)]
    cluster = await _completed(sc, _job(name, {"deletionRules": rules}))
    await sc.until_cluster(cluster, state_is("ready"), "Ready")
    await sc.advance(12, name)
    await _all_there(sc, name, cluster)
    await sc.advance(4, name)  # 16 s: past the workers' TTL
    await _no_workers(sc, cluster)
    await _all_there(sc, name, cluster, workers=False)
    await sc.advance(15, name)  # 31 s
    await _all_there(sc, name, cluster, workers=False)
    await sc.advance(5, name)  # 36 s: past the cluster's TTL
    await sc.gone(RAYCLUSTERS, cluster)
    await sc.get(name)
    await sc.advance(15, name)  # 51 s
    await sc.get(name)
    await sc.advance(5, name)  # 56 s: past the RayJob's own TTL
    await sc.gone(RAYJOBS, name)


async def test_deletion_strategy__legacy_on_success_delete_cluster_should_still_work(e2e: E2E) -> None:
    """TestDeletionStrategy/"Legacy OnSuccess DeleteCluster should still work"."""
    sc = e2e
    name = "legacy-success-test"
    strategy = {"onSuccess": {"policy": "DeleteCluster"}, "onFailure": {"policy": "DeleteCluster"}}
    cluster = await _completed(
        sc, _job(name, strategy, shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=10)
    )
    await sc.advance(8, name)
    await sc.cluster(cluster)
    await sc.advance(3, name)
    await sc.gone(RAYCLUSTERS, cluster)
    await sc.get(name)


# The four JobDeploymentStatus=Failed variants (not in issue 18's selection, same file in KubeRay).


@pytest.mark.parametrize("policy", POLICIES)
async def test_deletion_strategy__deletion_rules_with_job_deployment_status_failed_and(
    e2e: E2E, policy: str
) -> None:
    """TestDeletionStrategy/"DeletionRules with JobDeploymentStatus Failed and <policy> policy
    should ...": one rule on jobDeploymentStatus Failed, reached through activeDeadlineSeconds."""
    name = f"{_kebab(policy)}-after-jobdeploymentstatus-failed"
    doc = _job(name, {"deletionRules": [_rule(policy, TTL, failed=True)]}, long_running=True)
    await CHECKS[policy](e2e, name, await _deadline_failed(e2e, doc), TTL)
