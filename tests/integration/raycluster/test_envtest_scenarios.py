"""KubeRay's RayCluster envtest scenarios (docs/reference/behaviour.md §5.1), replayed against our envtest.

Pod phases and readiness are set by hand, as KubeRay's suite does; every assertion reads the API
server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from controllers import constants as C
from kuberay_py.client import Client, Invalid
from kuberay_py.client.resources import (
    EVENTS,
    INGRESSES,
    JOBS,
    PODS,
    ROLEBINDINGS,
    ROLES,
    SERVICEACCOUNTS,
    SERVICES,
)
from kuberay_py.envtest import Environment
from tests.api_objects import get_or_none
from tests.integration.raycluster.conftest import (
    Operator,
    all_running,
    head_pods,
    sample_cluster,
    set_pod_status,
    worker_pods,
)
from tests.live import update_live
from tests.polling import consistently, eventually

RC = C.RAYCLUSTERS


async def get_rc(client: Client, ns: str, name: str) -> dict[str, Any]:
    return await client.get(RC, name, ns)


def worker_group(**fields: Any) -> Callable[[dict[str, Any]], None]:
    """An edit of the first worker group, for ``update_live``."""
    return lambda o: o["spec"]["workerGroupSpecs"][0].update(**fields)


async def state(client: Client, ns: str, name: str) -> str | None:
    return ((await get_rc(client, ns, name)).get("status") or {}).get("state")


async def event_reasons(client: Client, ns: str) -> list[str]:
    return [e.get("reason", "") for e in (await client.list(EVENTS, ns))["items"]]


async def test_static_raycluster(operator: Operator, rc_client: Client, rc_namespace: str) -> None:
    ns, name = rc_namespace, "raycluster-static"
    await rc_client.create(RC, sample_cluster(name, ns), ns)

    svc = await eventually(lambda: get_or_none(rc_client, SERVICES, f"{name}-head-svc", ns), "head Service")
    assert svc["spec"]["clusterIP"] == "None"
    await eventually(lambda: _count(worker_pods(rc_client, ns, name), 3), "3 workers")
    heads = await eventually(lambda: head_pods(rc_client, ns, name), "head Pod")
    assert len(heads) == 1
    assert [c["name"] for c in heads[0]["spec"]["containers"]] == ["ray-head", "fluentbit"]
    await consistently(lambda: _count(worker_pods(rc_client, ns, name), 3), "exactly 3 workers", 0.5)

    await all_running(rc_client, ns, name)
    await eventually(lambda: _eq(state(rc_client, ns, name), "ready"), "state ready")
    status = (await get_rc(rc_client, ns, name))["status"]
    assert status["stateTransitionTimes"]["ready"]
    assert status["readyWorkerReplicas"] == 3 and status["availableWorkerReplicas"] == 3
    assert status["desiredWorkerReplicas"] == 3 and status["maxWorkerReplicas"] == 4
    assert status["observedGeneration"] == 1

    # A deleted worker is recreated.
    victim = (await worker_pods(rc_client, ns, name))[0]
    await rc_client.delete(PODS, victim["metadata"]["name"], ns)
    pods = await eventually(
        lambda: _names_without(worker_pods(rc_client, ns, name), victim["metadata"]["name"], 3), "replacement"
    )
    assert victim["metadata"]["name"] not in {p["metadata"]["name"] for p in pods}

    # replicas above maxReplicas are clamped.
    await update_live(rc_client, RC, name, ns, worker_group(replicas=5))
    await eventually(lambda: _count(worker_pods(rc_client, ns, name), 4), "4 workers (max)")
    await consistently(lambda: _count(worker_pods(rc_client, ns, name), 4), "no more than max", 0.5)


async def test_overridden_app_kubernetes_io_labels(
    operator: Operator, rc_client: Client, rc_namespace: str
) -> None:
    ns, name = rc_namespace, "raycluster-overridden-k8s-labels"
    body = sample_cluster(name, ns)
    body["spec"]["headGroupSpec"]["template"]["metadata"] = {"labels": {"app.kubernetes.io/name": "myapp"}}
    await rc_client.create(RC, body, ns)
    heads = await eventually(lambda: head_pods(rc_client, ns, name), "head Pod")
    assert heads[0]["metadata"]["labels"]["app.kubernetes.io/name"] == "myapp"
    await eventually(lambda: _count(worker_pods(rc_client, ns, name), 3), "3 workers")
    await set_pod_status(rc_client, heads[0], ip="1.1.1.1")
    for w in await worker_pods(rc_client, ns, name):
        await set_pod_status(rc_client, w)
    await eventually(lambda: _eq(state(rc_client, ns, name), "ready"), "ready")
    await eventually(
        lambda: _eq(_status_path(rc_client, ns, name, "head", "serviceIP"), "1.1.1.1"), "serviceIP = head IP"
    )


async def test_invalid_overridden_cluster_label(
    operator: Operator, rc_client: Client, rc_namespace: str
) -> None:
    ns, name = rc_namespace, "raycluster-overridden-cluster-label"
    body = sample_cluster(name, ns)
    body["spec"]["headGroupSpec"]["template"]["metadata"] = {
        "labels": {"ray.io/cluster": "invalid-cluster-name"}
    }
    await rc_client.create(RC, body, ns)
    heads = await eventually(lambda: head_pods(rc_client, ns, name), "head Pod")
    assert heads[0]["metadata"]["labels"]["ray.io/cluster"] == name
    await eventually(lambda: _count(worker_pods(rc_client, ns, name), 3), "3 workers")
    await all_running(rc_client, ns, name)
    await eventually(lambda: _eq(state(rc_client, ns, name), "ready"), "ready")


async def test_autoscaling_enabled(operator: Operator, rc_client: Client, rc_namespace: str) -> None:
    ns, name = rc_namespace, "raycluster-autoscaler"
    body = sample_cluster(name, ns)
    body["spec"]["enableInTreeAutoscaling"] = True
    await rc_client.create(RC, body, ns)
    for res in (ROLEBINDINGS, ROLES, SERVICEACCOUNTS):
        await eventually(lambda res=res: get_or_none(rc_client, res, name, ns), res.kind)
    workers = await eventually(lambda: _count(worker_pods(rc_client, ns, name), 3), "3 workers")
    head = (await eventually(lambda: head_pods(rc_client, ns, name), "head"))[0]
    assert [c["name"] for c in head["spec"]["containers"]][-1] == "autoscaler"
    assert head["spec"]["serviceAccountName"] == name

    # The autoscaler scales down: replicas 2 and the Pod it chose.
    victim = workers[0]["metadata"]["name"]

    def scale_down(o: dict[str, Any]) -> None:
        g = o["spec"]["workerGroupSpecs"][0]
        g["replicas"] = 2
        g["scaleStrategy"] = {"workersToDelete": [victim]}

    await update_live(rc_client, RC, name, ns, scale_down)
    pods = await eventually(lambda: _count(worker_pods(rc_client, ns, name), 2), "2 workers")
    assert victim not in {p["metadata"]["name"] for p in pods}
    await update_live(rc_client, RC, name, ns, worker_group(scaleStrategy={}))
    # ... and up.
    await update_live(rc_client, RC, name, ns, worker_group(replicas=4))
    await eventually(lambda: _count(worker_pods(rc_client, ns, name), 4), "4 workers")
    # Without workersToDelete, surplus Pods are left to the autoscaler.
    await update_live(rc_client, RC, name, ns, worker_group(replicas=1))
    await consistently(lambda: _count(worker_pods(rc_client, ns, name), 4), "no random scale-down", 0.5)


async def test_suspend_with_conditions(operator: Operator, rc_client: Client, rc_namespace: str) -> None:
    ns, name = rc_namespace, "raycluster-suspend"
    await rc_client.create(RC, sample_cluster(name, ns), ns)
    await eventually(lambda: _count(worker_pods(rc_client, ns, name), 3), "3 workers")
    await all_running(rc_client, ns, name)
    await eventually(lambda: _eq(state(rc_client, ns, name), "ready"), "ready")

    await update_live(rc_client, RC, name, ns, lambda o: o["spec"].update(suspend=True))
    await eventually(lambda: _count(_all_pods(rc_client, ns, name), 0), "all Pods deleted")
    await eventually(lambda: _cond(rc_client, ns, name, "RayClusterSuspended", "True"), "Suspended")
    assert await _cond(rc_client, ns, name, "RayClusterSuspending", "False")
    assert await _cond(rc_client, ns, name, "RayClusterProvisioned", "False")
    assert await state(rc_client, ns, name) == "suspended"

    await update_live(rc_client, RC, name, ns, lambda o: o["spec"].update(suspend=False))
    await eventually(lambda: _count(worker_pods(rc_client, ns, name), 3), "workers back")
    await eventually(lambda: _cond(rc_client, ns, name, "RayClusterSuspended", "False"), "not Suspended")
    await all_running(rc_client, ns, name)
    await eventually(lambda: _cond(rc_client, ns, name, "RayClusterProvisioned", "True"), "provisioned again")
    await eventually(lambda: _eq(state(rc_client, ns, name), "ready"), "ready again")


async def test_worker_group_suspend(operator: Operator, rc_client: Client, rc_namespace: str) -> None:
    ns, name = rc_namespace, "raycluster-suspend-group"
    await rc_client.create(RC, sample_cluster(name, ns), ns)
    await eventually(lambda: _count(worker_pods(rc_client, ns, name), 3), "3 workers")
    await update_live(rc_client, RC, name, ns, worker_group(suspend=True))
    await eventually(lambda: _count(worker_pods(rc_client, ns, name), 0), "group suspended")
    assert len(await head_pods(rc_client, ns, name)) == 1
    await update_live(rc_client, RC, name, ns, worker_group(suspend=False))
    await eventually(lambda: _count(worker_pods(rc_client, ns, name), 3), "group resumed")


async def test_multi_host_worker_group(operator: Operator, rc_client: Client, rc_namespace: str) -> None:
    ns, name = rc_namespace, "raycluster-multihost"
    body = sample_cluster(name, ns, replicas=2, max_replicas=4)
    body["spec"]["workerGroupSpecs"][0]["numOfHosts"] = 4
    await rc_client.create(RC, body, ns)
    pods = await eventually(lambda: _count(worker_pods(rc_client, ns, name), 8), "2 x 4 workers")
    replicas: dict[str, list[str]] = {}
    for p in pods:
        labels = p["metadata"]["labels"]
        replicas.setdefault(labels[C.RAY_WORKER_REPLICA_NAME_LABEL_KEY], []).append(
            labels[C.RAY_HOST_INDEX_LABEL_KEY]
        )
    assert sorted(sorted(v) for v in replicas.values()) == [["0", "1", "2", "3"]] * 2
    assert await get_or_none(rc_client, SERVICES, f"{name}-headless", ns)
    await all_running(rc_client, ns, name)
    await eventually(lambda: _eq(state(rc_client, ns, name), "ready"), "ready")
    status = (await get_rc(rc_client, ns, name))["status"]
    assert status["desiredWorkerReplicas"] == 8 and status["maxWorkerReplicas"] == 16

    # Deleting one host takes its whole replica group; the group is recreated whole.
    victim = pods[0]
    group = victim["metadata"]["labels"][C.RAY_WORKER_REPLICA_NAME_LABEL_KEY]
    await rc_client.delete(PODS, victim["metadata"]["name"], ns)
    await eventually(
        lambda: _replica_gone_and_full(rc_client, ns, name, group), "old replica group replaced, 8 workers"
    )
    # Scale down / up by whole groups.
    await update_live(rc_client, RC, name, ns, worker_group(replicas=1))
    await eventually(lambda: _count(worker_pods(rc_client, ns, name), 4), "1 x 4 workers")
    await update_live(rc_client, RC, name, ns, worker_group(replicas=3))
    await eventually(lambda: _count(worker_pods(rc_client, ns, name), 12), "3 x 4 workers")


async def test_pod_template_in_other_namespace(
    operator: Operator, rc_client: Client, rc_namespace: str
) -> None:
    ns, name = rc_namespace, "raycluster-other-ns"
    body = sample_cluster(name, ns)
    body["spec"]["headGroupSpec"]["template"]["metadata"] = {"namespace": "not-" + ns}
    body["spec"]["workerGroupSpecs"][0]["template"]["metadata"] = {"namespace": "not-" + ns}
    await rc_client.create(RC, body, ns)
    await eventually(lambda: head_pods(rc_client, ns, name), "head Pod in the CR's namespace")
    await eventually(lambda: _count(worker_pods(rc_client, ns, name), 3), "workers in the CR's namespace")


async def test_desired_resources(operator: Operator, rc_client: Client, rc_namespace: str) -> None:
    ns, name = rc_namespace, "raycluster-resources"
    body = sample_cluster(name, ns)
    await rc_client.create(RC, body, ns)
    await eventually(lambda: _eq(_status_path(rc_client, ns, name, "desiredCPU"), "0"), "desiredCPU 0")
    status = (await get_rc(rc_client, ns, name))["status"]
    assert status["desiredMemory"] == "0" and status["desiredGPU"] == "0"
    res = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": "1"}}

    def add_resources(o: dict[str, Any]) -> None:
        o["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["resources"] = res

    await update_live(rc_client, RC, name, ns, add_resources)
    await eventually(lambda: _eq(_status_path(rc_client, ns, name, "desiredCPU"), "3"), "desiredCPU 3")
    status = (await get_rc(rc_client, ns, name))["status"]
    assert status["desiredMemory"] == "3Gi" and status["desiredGPU"] == "3"


async def test_invalid_num_of_hosts(operator: Operator, rc_client: Client, rc_namespace: str) -> None:
    ns, name = rc_namespace, "raycluster-invalid-hosts"
    body = sample_cluster(name, ns)
    body["spec"]["workerGroupSpecs"][0]["numOfHosts"] = 0
    try:
        await rc_client.create(RC, body, ns)
    except Invalid as exc:  # the CRD schema may reject it outright; then nothing exists at all
        assert "numOfHosts" in str(exc)
        return
    await eventually(lambda: _status_path(rc_client, ns, name, "reason"), "status.reason")
    assert "InvalidRayClusterSpec" in await event_reasons(rc_client, ns)
    assert await _all_pods(rc_client, ns, name) == []


async def test_invalid_spec_change_deletes_nothing(
    operator: Operator, rc_client: Client, rc_namespace: str
) -> None:
    ns, name = rc_namespace, "raycluster-invalid-later"
    await rc_client.create(RC, sample_cluster(name, ns), ns)
    await eventually(lambda: _count(worker_pods(rc_client, ns, name), 3), "3 workers")

    def break_it(o: dict[str, Any]) -> None:
        o["spec"]["workerGroupSpecs"][0].update(minReplicas=5, maxReplicas=2, replicas=0)

    await update_live(rc_client, RC, name, ns, break_it)
    reason = await eventually(lambda: _status_path(rc_client, ns, name, "reason"), "status.reason")
    assert "minReplicas" in reason or "maxReplicas" in reason
    assert "InvalidRayClusterSpec" in await eventually(lambda: event_reasons(rc_client, ns), "events")
    await consistently(lambda: _count(worker_pods(rc_client, ns, name), 3), "nothing deleted", 0.5)


async def test_status_conditions(operator: Operator, rc_client: Client, rc_namespace: str) -> None:
    ns, name = rc_namespace, "raycluster-conditions"
    await rc_client.create(RC, sample_cluster(name, ns), ns)
    await eventually(lambda: _cond(rc_client, ns, name, "RayClusterProvisioned", "False"), "provisioning")
    heads = await eventually(lambda: head_pods(rc_client, ns, name), "head")
    await eventually(lambda: _cond(rc_client, ns, name, "HeadPodReady", "False"), "head not ready")
    await set_pod_status(rc_client, heads[0], ip="10.2.0.1")
    cond = await eventually(lambda: _cond(rc_client, ns, name, "HeadPodReady", "True"), "head ready")
    assert cond["reason"] == "HeadPodRunningAndReady"
    await eventually(lambda: _count(worker_pods(rc_client, ns, name), 3), "workers")
    await all_running(rc_client, ns, name)
    cond = await eventually(
        lambda: _cond(rc_client, ns, name, "RayClusterProvisioned", "True"), "provisioned"
    )
    assert cond["reason"] == "AllPodRunningAndReadyFirstTime"
    # Provisioned stays True once reached, even when a worker becomes unready.
    await set_pod_status(rc_client, (await worker_pods(rc_client, ns, name))[0], ready=False)
    await eventually(lambda: _eq(_status_path(rc_client, ns, name, "readyWorkerReplicas"), 2), "2 ready")
    assert await _cond(rc_client, ns, name, "RayClusterProvisioned", "True")
    assert await state(rc_client, ns, name) == "ready"


async def test_maximum_name_services_not_truncated(
    operator: Operator, rc_client: Client, rc_namespace: str
) -> None:
    ns, name = rc_namespace, "r" * 53
    body = sample_cluster(name, ns)
    body["metadata"]["annotations"] = {"ray.io/enable-serve-service": "true"}
    body["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "serve", "containerPort": 8000}
    ]
    await rc_client.create(RC, body, ns)
    await eventually(lambda: get_or_none(rc_client, SERVICES, f"{name}-head-svc", ns), "head Service")
    await eventually(lambda: get_or_none(rc_client, SERVICES, f"{name}-serve-svc", ns), "serve Service")


async def test_custom_probe_ports(operator: Operator, rc_client: Client, rc_namespace: str) -> None:
    ns, name = rc_namespace, "raycluster-probe-ports"
    body = sample_cluster(name, ns)
    body["spec"]["headGroupSpec"]["rayStartParams"] = {
        "dashboard-port": "8266",
        "dashboard-agent-listen-port": "8365",
    }
    body["spec"]["workerGroupSpecs"][0]["rayStartParams"] = {"dashboard-agent-listen-port": "9000"}
    await rc_client.create(RC, body, ns)
    head = (await eventually(lambda: head_pods(rc_client, ns, name), "head"))[0]
    cmd = head["spec"]["containers"][0]["livenessProbe"]["exec"]["command"][2]
    assert ":8266/" in cmd and ":8365/" in cmd
    workers = await eventually(lambda: _count(worker_pods(rc_client, ns, name), 3), "workers")
    assert ":9000/" in workers[0]["spec"]["containers"][0]["readinessProbe"]["exec"]["command"][2]


async def test_pod_cache_is_scoped_to_ray_pods(
    operator: Operator, rc_client: Client, rc_namespace: str
) -> None:
    ns = rc_namespace
    await rc_client.create(
        PODS,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "not-ray"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        },
        ns,
    )
    name = "raycluster-cache"
    await rc_client.create(RC, sample_cluster(name, ns, replicas=1), ns)
    await eventually(lambda: head_pods(rc_client, ns, name), "head")
    cache = operator.manager.cache
    await eventually(lambda: _truthy(cache.list(PODS, ns)), "Ray Pods cached")
    cached = {p["metadata"]["name"] for p in cache.list(PODS, ns)}
    assert "not-ray" not in cached


async def test_redis_cleanup_finalizer_timeout_and_auto_deletion(
    operator: Operator, rc_client: Client, rc_namespace: str
) -> None:
    ns = rc_namespace
    for name, complete in (("raycluster-ft-timeout", False), ("raycluster-ft-done", True)):
        body = sample_cluster(name, ns, replicas=1)
        body["spec"]["gcsFaultToleranceOptions"] = {"redisAddress": "redis:6379"}
        await rc_client.create(RC, body, ns)
        obj = await eventually(lambda name=name: _finalized(rc_client, ns, name), "finalizer added")
        assert C.GCS_FT_REDIS_CLEANUP_FINALIZER in obj["metadata"]["finalizers"]
        await eventually(lambda name=name: head_pods(rc_client, ns, name), "head")
        await rc_client.delete(RC, name, ns)
        job = await eventually(
            lambda name=name: get_or_none(rc_client, JOBS, f"{name}-redis-cleanup", ns), "cleanup Job"
        )
        assert job["spec"]["template"]["metadata"]["labels"]["ray.io/node-type"] == "redis-cleanup"
        if complete:
            await update_live(rc_client, JOBS, job["metadata"]["name"], ns, _job_complete, status=True)
        else:
            # The cleanup never finishes: a 1 s deletion timeout force-removes the finalizer. It is
            # set only now, once the Job exists: set from the start, the Job would be created only
            # if the operator got there within 1 s of a deletionTimestamp of second precision,
            # which a real kube-apiserver does not always allow.
            timeout = {"metadata": {"annotations": {C.GCS_FT_DELETION_TIMEOUT_ANNOTATION_KEY: "1"}}}
            await rc_client.patch(RC, name, timeout, ns)
        await eventually(lambda name=name: _gone(rc_client, RC, name, ns), f"{name} deleted")
    assert "ForceDeletedStuckCluster" in await event_reasons(rc_client, ns)
    assert "CreatedRedisCleanupJob" in await event_reasons(rc_client, ns)


# ---------------------------------------------------------------------------------------------- helpers
def _job_complete(job: dict[str, Any]) -> None:
    """What the Job controller writes once the cleanup Pod succeeded (envtest runs none): since
    Kubernetes 1.33 a Complete Job needs startTime, completionTime and SuccessCriteriaMet first."""
    now = job["metadata"]["creationTimestamp"]
    done = {"status": "True", "lastTransitionTime": now, "reason": "CompletionsReached"}
    job["status"] = {
        "startTime": now,
        "completionTime": now,
        "succeeded": 1,
        "conditions": [{"type": "SuccessCriteriaMet", **done}, {"type": "Complete", **done}],
    }


async def _gone(client: Client, res: Any, name: str, ns: str) -> bool:
    return await get_or_none(client, res, name, ns) is None


async def _count(pods_coro: Any, n: int) -> Any:
    """The Pods when there are exactly ``n`` (``True`` for zero, so polling sees success)."""
    pods = await pods_coro
    if len(pods) != n:
        return None
    return pods or True


async def _eq(value_coro: Any, expected: Any) -> bool:
    return bool(await value_coro == expected)


async def _truthy(value: Any) -> Any:
    return value


async def _names_without(pods_coro: Any, name: str, n: int) -> list[dict[str, Any]] | None:
    pods = await pods_coro
    if len(pods) == n and name not in {p["metadata"]["name"] for p in pods}:
        return pods
    return None


async def _all_pods(client: Client, ns: str, name: str) -> list[dict[str, Any]]:
    return (await client.list(PODS, ns, label_selector=f"ray.io/cluster={name}"))["items"]


async def _status_path(client: Client, ns: str, name: str, *path: str) -> Any:
    value: Any = (await get_rc(client, ns, name)).get("status") or {}
    for p in path:
        value = (value or {}).get(p)
    return value


async def _cond(client: Client, ns: str, name: str, type_: str, status: str) -> dict[str, Any] | None:
    for c in (await _status_path(client, ns, name, "conditions")) or []:
        if c["type"] == type_ and c["status"] == status:
            return dict(c)
    return None


async def _finalized(client: Client, ns: str, name: str) -> dict[str, Any] | None:
    obj = await get_rc(client, ns, name)
    return obj if obj["metadata"].get("finalizers") else None


async def _replica_gone_and_full(client: Client, ns: str, name: str, group: str) -> bool:
    pods = await worker_pods(client, ns, name)
    groups = {p["metadata"]["labels"][C.RAY_WORKER_REPLICA_NAME_LABEL_KEY] for p in pods}
    return len(pods) == 8 and group not in groups


async def test_ingress_created_and_kept_in_line_with_the_spec(
    operator: Operator, rc_client: Client, rc_namespace: str
) -> None:
    ns, name = rc_namespace, "raycluster-ingress"
    body = sample_cluster(name, ns, replicas=1)
    body["metadata"]["annotations"] = {"kubernetes.io/ingress.class": "nginx"}
    body["spec"]["headGroupSpec"]["enableIngress"] = True
    await rc_client.create(RC, body, ns)
    ing = await eventually(lambda: get_or_none(rc_client, INGRESSES, f"{name}-head-ingress", ns), "Ingress")
    assert ing["spec"]["ingressClassName"] == "nginx"
    path = ing["spec"]["rules"][0]["http"]["paths"][0]
    assert path["path"] == "/" and path["backend"]["service"]["name"] == f"{name}-head-svc"
    assert path["backend"]["service"]["port"]["number"] == 8265

    def new_path(o: dict[str, Any]) -> None:
        o["spec"]["headGroupSpec"]["ingressOptions"] = {"path": "/ray", "pathType": "Prefix"}

    await update_live(rc_client, RC, name, ns, new_path)

    async def updated() -> bool:
        cur = await get_or_none(rc_client, INGRESSES, f"{name}-head-ingress", ns)
        return bool(cur and cur["spec"]["rules"][0]["http"]["paths"][0]["path"] == "/ray")

    await eventually(updated, "Ingress path updated")
    assert "UpdatedIngress" in await eventually(lambda: event_reasons(rc_client, ns), "events")


@pytest.mark.builtin_only(reason="refuses every Pod create with an injected 403 'exceeded quota', then stops")
async def test_failed_pod_creation_sets_replica_failure_then_recovers(
    operator: Operator, rc_client: Client, rc_namespace: str, crd_env: Environment
) -> None:
    assert crd_env.server is not None  # builtin_only
    ns, name = rc_namespace, "raycluster-quota"
    await rc_client.create(RC, sample_cluster(name, ns, replicas=0), ns)
    await eventually(lambda: head_pods(rc_client, ns, name), "head")
    fault = crd_env.server.inject(
        "POST", rf"/api/v1/namespaces/{ns}/pods$", 403, -1, reason="Forbidden", message="exceeded quota: pods"
    )
    try:
        await update_live(rc_client, RC, name, ns, worker_group(replicas=2))
        cond = await eventually(
            lambda: _cond(rc_client, ns, name, "ReplicaFailure", "True"), "ReplicaFailure"
        )
        assert cond["reason"] == "FailedCreateWorkerPod"
        assert "FailedToCreateWorkerPod" in await eventually(lambda: event_reasons(rc_client, ns), "events")
    finally:
        crd_env.server.clear_faults()
    del fault
    await eventually(lambda: _count(worker_pods(rc_client, ns, name), 2), "workers after the quota is lifted")

    async def no_replica_failure() -> bool:
        conds = (await _status_path(rc_client, ns, name, "conditions")) or []
        return not any(c["type"] == "ReplicaFailure" for c in conds)

    await eventually(no_replica_failure, "ReplicaFailure removed")
