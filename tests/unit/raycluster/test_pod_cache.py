"""The Pod cache transform keeps every field the controllers read.

Each scenario builds whole Pods the way the operator and the (simulated) kubelet write them, then
runs every reader of cached Pods (RayCluster status, the terminal-Pod rule, scaling plans, a whole
reconcile, RayService's head lookups, ports and auth token, the expectations) on the full Pods and
on ``slim_pod`` of them: the answers must be identical.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from controllers import constants as C
from controllers.common import heads
from controllers.common.pods import is_running_and_ready
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.pod import build_head_pod, build_worker_pod
from controllers.raycluster.pod_cache import slim_pod
from controllers.raycluster.scaling import plan_group, should_delete_pod
from controllers.raycluster.services import build_head_service
from controllers.raycluster.setup import cache_transforms
from controllers.raycluster.status import compute_status
from controllers.rayservice.heads import head_target
from kuberay_py.cache import controller_owner_uid
from kuberay_py.client.resources import PODS
from kuberay_py.clock import FakeClock
from kuberay_py.controller import Expectations, Request
from kuberay_py.envtest.sim.podstatus import ContainerState, build_status
from kuberay_py.objects import Obj
from tests.unit.raycluster.test_pod_builder import cluster as make_cluster
from tests.unit.raycluster.test_reconciler import FakeCache, setup_env

NOW = "2026-11-29T20:00:05Z"
OPTS = RayClusterOptions()


def ray_cluster(workers: int = 3) -> Obj:
    rc = make_cluster()
    head = rc["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    head["ports"] = [
        {"name": "serve", "containerPort": 9000},
        {"name": "dashboard", "containerPort": 8266},
        {"name": "gcs-server", "containerPort": 6379},
    ]
    head["env"] = [
        {"name": "MY_SETTING", "value": "x" * 200},
        {"name": "RAY_AUTH_MODE", "value": "token"},
        {"name": "RAY_AUTH_TOKEN", "valueFrom": {"secretKeyRef": {"name": "ray-token", "key": "t"}}},
    ]
    rc["spec"]["headGroupSpec"]["rayStartParams"] = {"dashboard-port": "8266"}
    group = rc["spec"]["workerGroupSpecs"][0]
    group["replicas"] = workers
    group["maxReplicas"] = workers + 2
    return rc


def materialize(
    pod: Obj,
    name: str,
    n: int,
    *,
    phase: str | None = "Running",
    ready: bool = True,
    waiting: str = "",
    terminated: bool = False,
    restart_policy: str | None = None,
    deleting: bool = False,
) -> Obj:
    """What the API server and kubelet make of a Pod the builder produced."""
    pod = copy.deepcopy(pod)
    meta = pod["metadata"]
    meta.update(
        name=name,
        namespace="ns",
        uid=f"uid-{name}",
        resourceVersion=str(100 + n),
        creationTimestamp=f"2026-11-29T20:00:0{n % 10}Z",
        managedFields=[{"manager": "kuberay-operator", "operation": "Update", "fieldsV1": {"f:spec": {}}}],
    )
    if deleting:
        meta["deletionTimestamp"] = NOW
        meta["deletionGracePeriodSeconds"] = 30
    spec = pod["spec"]
    spec["nodeName"] = "node-1"
    if restart_policy:
        spec["restartPolicy"] = restart_policy
    spec.setdefault("restartPolicy", "Always")
    spec["volumes"] = [*spec.get("volumes", []), {"name": "kube-api-access", "projected": {"sources": []}}]
    if phase is None:  # not scheduled yet
        pod["status"] = {"phase": "Pending", "qosClass": "Guaranteed"}
        return pod
    containers = [
        ContainerState(
            name=c["name"],
            image=c.get("image", ""),
            started_at="2026-11-29T20:00:01Z",
            ready=ready,
            running=not terminated,
            exit_code=1 if terminated else 0,
            waiting_reason=waiting,
            waiting_message=f"back-off restarting {c['name']}" if waiting else "",
        )
        for c in spec["containers"]
    ]
    pod["status"] = build_status(
        pod,
        pod_ip=f"10.0.0.{n}",
        host_ip="10.1.0.1",
        start_time="2026-11-29T20:00:01Z",
        containers=containers,
        now=NOW,
        phase=phase,
    )
    pod["status"]["qosClass"] = "Guaranteed"
    return pod


def head(rc: Obj, name: str = "rc-head-aaaaa", n: int = 0, **kw: Any) -> Obj:
    return materialize(build_head_pod(rc, OPTS), name, n, **kw)


def worker(rc: Obj, name: str, n: int, **kw: Any) -> Obj:
    group = rc["spec"]["workerGroupSpecs"][0]
    return materialize(build_worker_pod(rc, group, OPTS), name, n, **kw)


def scenarios() -> dict[str, tuple[Obj, list[Obj]]]:
    rc = ray_cluster()
    return {
        "head unscheduled": (rc, [head(rc, phase=None)]),
        "head crash-looping, workers mixed": (
            rc,
            [
                head(rc, phase="Running", ready=False, waiting="CrashLoopBackOff"),
                worker(rc, "rc-small-worker-1", 1),
                worker(rc, "rc-small-worker-2", 2, phase="Pending", ready=False, waiting="ContainerCreating"),
            ],
        ),
        "all ready": (
            rc,
            [head(rc)] + [worker(rc, f"rc-small-worker-{i}", i) for i in range(1, 4)],
        ),
        "terminal workers": (
            rc,
            [
                head(rc),
                worker(rc, "rc-small-worker-1", 1, phase="Failed", ready=False, terminated=True),
                worker(rc, "rc-small-worker-2", 2, terminated=True, ready=False, restart_policy="Never"),
                worker(rc, "rc-small-worker-3", 3, terminated=True, ready=False),  # Always: kubelet restarts
                worker(rc, "rc-small-worker-4", 4),
            ],
        ),
        "old head terminating, new head ready": (
            rc,
            [
                head(rc, "rc-head-old", 1, deleting=True),
                head(rc, "rc-head-new", 2),
                worker(rc, "rc-small-worker-5", 5, deleting=True),
            ],
        ),
    }


def fake_cache(rc: Obj, pods: list[Obj]) -> FakeCache:
    cache = FakeCache()
    cache.put(C.RAYCLUSTERS, rc)
    for pod in pods:
        cache.put(PODS, pod)
    return cache


def rayservice_view(rc: Obj, pods: list[Obj]) -> Any:
    cache = fake_cache(rc, pods)
    found = heads.head_pod(cache, "ns", "rc")
    per_pod = [
        (
            is_running_and_ready(p),
            heads.serve_port(p),
            heads.dashboard_port(p, rc),
            head_target(p, "ns/svc"),
            heads.auth_token_source(p),
        )
        for p in pods
    ]
    return (found and found["metadata"]["name"], per_pod)


def raycluster_view(rc: Obj, pods: list[Obj]) -> Any:
    group = rc["spec"]["workerGroupSpecs"][0]
    live_workers = [
        p
        for p in pods
        if p["metadata"]["labels"][C.RAY_NODE_TYPE_LABEL_KEY] == C.NODE_TYPE_WORKER
        and not p["metadata"].get("deletionTimestamp")
    ]
    plans = []
    for random_delete in (False, True):
        plan = plan_group(rc, group, live_workers, random_delete=random_delete)
        plans.append(
            (
                [p["metadata"]["name"] for p in plan.delete],
                plan.delete_reasons,
                plan.create_replicas,
                plan.surplus_kept,
            )
        )
    return (
        compute_status(rc, pods, build_head_service(rc), now=NOW),
        [should_delete_pod(p) for p in pods],
        [is_running_and_ready(p) for p in pods],
        [controller_owner_uid(p) for p in pods],
        plans,
    )


@pytest.mark.parametrize("name", list(scenarios()))
def test_readers_answer_the_same_on_slim_pods(name: str) -> None:
    rc, pods = scenarios()[name]
    slim = [slim_pod(copy.deepcopy(p)) for p in pods]
    assert raycluster_view(rc, slim) == raycluster_view(rc, pods)
    assert rayservice_view(rc, slim) == rayservice_view(rc, pods)


@pytest.mark.parametrize("name", list(scenarios()))
async def test_a_whole_reconcile_is_the_same_on_slim_pods(name: str) -> None:
    outcomes = []
    for transform in (lambda p: p, slim_pod):
        rc, pods = scenarios()[name]
        reconciler, cache, client, events = setup_env(rc)
        for pod in pods:
            cache.put(PODS, transform(copy.deepcopy(pod)))
        await reconciler.reconcile(Request("ns", "rc"))
        outcomes.append((client.requests, getattr(client, "last_status", None), events.events))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0]  # every scenario makes the reconciler act, so there is something to compare


def test_expectations_are_satisfied_by_slim_pods() -> None:
    rc = ray_cluster()
    created = worker(rc, "rc-small-worker-xyz12", 7)
    expectations = Expectations(clock=FakeClock())
    expectations.expect_created("ns/rc", created)
    expectations.expect_deleted("ns/rc", created)
    assert not expectations.satisfied("ns/rc")
    expectations.on_add(slim_pod(copy.deepcopy(created)), False)
    gone = slim_pod(copy.deepcopy(created))
    gone["metadata"]["deletionTimestamp"] = NOW
    expectations.on_update(slim_pod(copy.deepcopy(created)), gone)
    assert expectations.satisfied("ns/rc")
    # Creations expected by generateName are matched through the owner reference and the prefix.
    other = worker(rc, "rc-small-worker-abc34", 8)
    expectations.expect_creations("ns/rc", generate_name=other["metadata"]["generateName"], count=1)
    assert not expectations.satisfied("ns/rc")
    expectations.on_add(slim_pod(copy.deepcopy(other)), False)
    assert expectations.satisfied("ns/rc")


def test_slim_pod_drops_what_nobody_reads() -> None:
    rc = ray_cluster()
    full = head(rc)
    slim = slim_pod(copy.deepcopy(full))
    assert "managedFields" not in slim["metadata"]
    assert set(slim["spec"]) == {"restartPolicy", "nodeName", "containers"}
    assert slim["spec"]["containers"] == [
        {
            "name": "ray-head",
            "ports": full["spec"]["containers"][0]["ports"],
            "env": [
                {"name": "RAY_AUTH_MODE", "value": "token"},
                {"name": "RAY_AUTH_TOKEN", "valueFrom": {"secretKeyRef": {"name": "ray-token", "key": "t"}}},
            ],
        }
    ]
    assert "initContainerStatuses" not in slim["status"] and "qosClass" not in slim["status"]
    kept_status = {"name", "ready", "started", "restartCount", "state", "lastState"}
    assert set(slim["status"]["containerStatuses"][0]) == kept_status
    assert slim["metadata"]["labels"] == full["metadata"]["labels"]
    assert slim["metadata"]["ownerReferences"] == full["metadata"]["ownerReferences"]
    assert len(orjson.dumps(slim)) * 2 < len(orjson.dumps(full))
    # Of a healthy Pod's conditions only Ready is kept; conditions that are not True stay.
    assert [c["type"] for c in slim["status"]["conditions"]] == ["Ready"]
    sick = head(rc, phase="Running", ready=False, waiting="CrashLoopBackOff")
    scheduled = next(c for c in sick["status"]["conditions"] if c["type"] == "PodScheduled")
    scheduled.update(status="False", reason="Unschedulable")
    kept = [(c["type"], c["status"]) for c in slim_pod(sick)["status"]["conditions"]]
    assert kept == [("Ready", "False"), ("ContainersReady", "False"), ("PodScheduled", "False")]


def test_repeated_strings_are_shared_between_pods() -> None:
    rc = ray_cluster()
    a, b = (slim_pod(orjson.loads(orjson.dumps(worker(rc, f"w{i}", i)))) for i in (1, 2))
    for key in (C.RAY_CLUSTER_LABEL_KEY, C.RAY_NODE_GROUP_LABEL_KEY):
        assert a["metadata"]["labels"][key] is b["metadata"]["labels"][key]
    assert a["metadata"]["namespace"] is b["metadata"]["namespace"]
    assert a["metadata"]["ownerReferences"][0]["uid"] is b["metadata"]["ownerReferences"][0]["uid"]
    assert a["status"]["conditions"][0]["type"] is b["status"]["conditions"][0]["type"]
    # keys are not interned again: orjson decodes equal map keys to one cached object
    for key_a, key_b in zip(a["metadata"]["labels"], b["metadata"]["labels"], strict=True):
        assert key_a is key_b


def test_slim_pod_tolerates_partial_objects() -> None:
    bare = {"metadata": {"name": "p", "namespace": "ns"}}
    assert slim_pod(copy.deepcopy(bare)) == bare
    odd = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": ["?"]}, "status": {}}
    assert slim_pod(odd) == odd


def test_the_operator_transforms_pods_only() -> None:
    assert cache_transforms() == {PODS: slim_pod}
