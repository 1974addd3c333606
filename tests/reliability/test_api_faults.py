"""API-server faults while reconciling: the operator retries, converges and breaks nothing.

A kube-apiserver under load answers 429 (with Retry-After), an etcd hiccup gives 500s, and a
racing writer gives 409s. None of these may make the operator delete or recreate anything, and the
serve Service must keep its ready endpoints all along.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from controllers.constants import RAYCLUSTERS, RAYSERVICES
from controllers.raycluster.setup import CONTROLLER_NAME as RAYCLUSTER_CONTROLLER
from tests.live import update_live

from .conftest import (
    InProcessOperator,
    Rig,
    Traffic,
    eventually,
    head_checks,
    rayservice,
    reconcile_errors,
    serve_config,
)

SERVE_SVC = "rs-serve-svc"
DELETES = ("delete", "deletecollection")
pytestmark = pytest.mark.builtin_only(
    reason="answers the operator's requests with injected 500s, 429s and 409s, which kube-apiserver "
    "gives only under real overload, etcd faults or racing writers, never on cue"
)


async def test_500_429_409_during_a_scale_up_are_retried_without_deleting_anything(rig: Rig) -> None:
    ns = rig.namespace
    async with InProcessOperator(rig):
        cluster = await rig.serve_sample()
        before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in await rig.pods(cluster)}
        server = rig.server
        server.request_log.clear()
        errors_before = reconcile_errors(RAYCLUSTER_CONTROLLER)
        faults = [
            server.inject("POST", rf"^/api/v1/namespaces/{ns}/pods$", 500, count=2),
            server.inject("POST", rf"^/api/v1/namespaces/{ns}/pods$", 429, count=1, retry_after=1),
            server.inject("PUT", rf"/namespaces/{ns}/rayclusters/{cluster}/status$", 409, count=2),
            server.inject("PUT", rf"/namespaces/{ns}/rayservices/rs/status$", 500, count=1),
            server.inject("PUT", rf"/namespaces/{ns}/rayservices/rs/status$", 409, count=1),
            server.inject("PUT", rf"/namespaces/{ns}/rayservices/rs/status$", 429, count=1, retry_after=1),
        ]

        async with Traffic(rig, SERVE_SVC, max_seconds=60, max_requests=6000) as traffic:
            # the autoscaler's way of scaling a group, and the user's serve config following it
            await rig.client.patch(
                RAYCLUSTERS,
                cluster,
                [{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 5}],
                ns,
                patch_type="json",
            )
            await update_live(rig.client, RAYSERVICES, "rs", ns, _serve_config(5))

            async def scaled() -> dict[str, Any] | None:
                cur = await rig.rs()
                status = cur.get("status") or {}
                apps = (status.get("activeServiceStatus") or {}).get("applicationStatuses") or {}
                done = (
                    status.get("numServeEndpoints") == 6
                    and status.get("observedGeneration") == cur["metadata"]["generation"]
                    and (apps.get("fruit_app") or {}).get("status") == "RUNNING"
                )
                return cur if done else None

            cur = await eventually(scaled, "rs serving from 6 endpoints", timeout=60)
            await rig.wait_ready_pods(SERVE_SVC, 6)
            await traffic.flows(50, "traffic after the scale-up")

    unfired = [(f.method, f.path.pattern, f.status, f.hits) for f in faults if f.remaining != 0]
    assert unfired == [], f"faults never triggered, so nothing was tested: {unfired}"
    report = traffic.report
    report.assert_all_served(100)
    assert report.min_endpoints is not None and report.min_endpoints >= 4  # never lost an endpoint
    assert cur["status"]["activeServiceStatus"]["rayClusterName"] == cluster  # no new cluster
    assert condition_true(cur, "Ready")
    after = {p["metadata"]["name"]: p["metadata"]["uid"] for p in await rig.pods(cluster)}
    assert before.items() <= after.items() and len(after) == 6
    log = server.request_log.records
    assert [r for r in log if r.verb in DELETES] == []
    created = [r for r in log if r.verb == "create" and r.resource == "pods" and r.status == 201]
    assert len(created) == 2  # the 500s/429 were retried, never turned into an extra Pod
    # each failed create was retried once, no storm: 2 successes + 2 x 500 + 1 x 429
    assert sum(1 for r in log if r.verb == "create" and r.resource == "pods") == 5
    # the 500s surfaced as reconcile errors, i.e. went through the rate-limited (back-off) requeue
    assert reconcile_errors(RAYCLUSTER_CONTROLLER) >= errors_before + 1
    assert len((await rig.client.list(RAYCLUSTERS, ns))["items"]) == 1


def condition_true(obj: dict[str, Any], type_: str) -> bool:
    return any(
        c["type"] == type_ and c["status"] == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


async def test_faults_while_a_rayservice_comes_up_give_one_cluster_and_no_deletes(rig: Rig) -> None:
    ns = rig.namespace
    server = rig.server
    server.request_log.clear()
    rayclusters = rf"^/apis/ray.io/v1/namespaces/{ns}/rayclusters"
    faults = [
        server.inject("POST", rf"{rayclusters}$", 500, count=2),
        server.inject("POST", rf"{rayclusters}$", 429, count=1, retry_after=1),
        server.inject("POST", rf"^/api/v1/namespaces/{ns}/services$", 500, count=2),
        server.inject("POST", rf"^/api/v1/namespaces/{ns}/pods$", 500, count=2),
        server.inject("PATCH", rf"^/api/v1/namespaces/{ns}/pods/[^/]+$", 500, count=1),  # ray.io/serve label
        server.inject("PATCH", rf"^/api/v1/namespaces/{ns}/pods/[^/]+$", 409, count=1),
        server.inject("PUT", rf"/namespaces/{ns}/rayservices/rs/status$", 409, count=2),
        server.inject("PUT", rf"{rayclusters}/[^/]+/status$", 500, count=2),
    ]
    async with InProcessOperator(rig):
        await rig.client.create(RAYSERVICES, rayservice(), ns)
        svc = await rig.wait_ready("rs", endpoints=4)
        await rig.wait_ready_pods(SERVE_SVC, 4)

    unfired = [(f.method, f.path.pattern, f.status, f.hits) for f in faults if f.remaining != 0]
    assert unfired == [], f"faults never triggered, so nothing was tested: {unfired}"
    cluster = svc["status"]["activeServiceStatus"]["rayClusterName"]
    assert [rc["metadata"]["name"] for rc in (await rig.client.list(RAYCLUSTERS, ns))["items"]] == [cluster]
    assert len(await rig.pods(cluster, "head")) == 1 and len(await rig.pods(cluster, "worker")) == 3
    log = server.request_log.records
    assert [r for r in log if r.verb in DELETES and r.namespace == ns] == []
    created = [r for r in log if r.verb == "create" and r.status == 201 and r.namespace == ns]
    by_resource = {
        res: sum(1 for r in created if r.resource == res) for res in ("rayclusters.ray.io", "pods")
    }
    assert by_resource == {"rayclusters.ray.io": 1, "pods": 4}


async def test_expired_and_cut_watches_relist_quietly_and_changes_still_arrive(rig: Rig) -> None:
    server = rig.server
    async with InProcessOperator(rig):
        cluster = await rig.serve_sample()

        # 410 Expired on every watch (an etcd compaction): every informer must relist
        server.request_log.clear()
        assert server.force_expire_watches() > 0
        kinds = (
            "rayservices.ray.io",
            "rayclusters.ray.io",
            "pods",
            "services",
            "endpointslices.discovery.k8s.io",
        )

        async def relisted() -> bool:
            lists = {r.resource for r in server.request_log.records if r.verb == "list" and r.status == 200}
            return set(kinds) <= lists

        await eventually(relisted, "every informer relisted after the 410")
        beats = head_checks()
        await eventually(
            lambda: _at_least(head_checks, beats + 10), "10 more head-proxy checks after the relist"
        )
        writes = [r for r in server.request_log.records if r.verb in ("create", "update", "patch", "delete")]
        assert writes == [], writes  # a relist that finds nothing new writes nothing

        # connections dropped mid-stream, then a change: it must still reach the operator
        assert server.cut_watches() > 0
        await update_live(rig.client, RAYSERVICES, "rs", rig.namespace, _serve_config(2))
        cur = await rig.wait_ready("rs", endpoints=3)
        await rig.wait_ready_pods(SERVE_SVC, 3)
    assert cur["status"]["activeServiceStatus"]["rayClusterName"] == cluster
    apps = cur["status"]["activeServiceStatus"]["applicationStatuses"]
    assert apps["fruit_app"]["status"] == "RUNNING"


def _serve_config(replicas: int) -> Callable[[dict[str, Any]], None]:
    return lambda rs: rs["spec"].update(serveConfigV2=yaml.safe_dump(serve_config(replicas)))


async def _at_least(counter: Callable[[], float], n: float) -> bool:
    return counter() >= n


async def test_api_server_outage_is_ridden_out_and_the_operator_resumes_without_a_restart(rig: Rig) -> None:
    ns = rig.namespace
    server = rig.server
    async with InProcessOperator(rig) as operator:
        cluster = await rig.serve_sample()

        async with Traffic(rig, SERVE_SVC, max_seconds=60, max_requests=6000) as traffic:
            server.request_log.clear()
            # every request but this test's own EndpointSlice reads (its stand-in for kube-proxy,
            # which keeps its last rules during an outage) gets 503s, and open watches break
            outage = server.inject("*", r"^(?!/apis/discovery\.k8s\.io/v1/namespaces/)", 503, count=-1)
            server.cut_watches()

            async def watches_failing() -> bool:
                return outage.hits >= 20

            await eventually(watches_failing, "clients hitting the outage")
            await traffic.flows(100, "traffic during the outage")
            outage.remaining = 0  # the API server is back

            await update_live(rig.client, RAYSERVICES, "rs", ns, _serve_config(2))
            cur = await rig.wait_ready("rs", endpoints=3)
            await rig.wait_ready_pods(SERVE_SVC, 3)
            assert operator.running()

    report = traffic.report
    report.assert_all_served(100)
    assert cur["status"]["activeServiceStatus"]["rayClusterName"] == cluster
    log = server.request_log.records
    assert [r for r in log if r.verb in DELETES] == []
    assert [r for r in log if r.verb == "create" and r.resource in ("pods", "rayclusters.ray.io")] == []
