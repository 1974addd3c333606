"""Operator down, serving continues (KubeRay PR #1808's promise).

Worker Serve proxies are judged by the kubelet (the worker's readiness probe), so the serve
Service's EndpointSlices keep following reality with no operator at all: a failing proxy, a
replica moved by a user's ``serve deploy`` and a deleted worker Pod all change the endpoints, and
traffic routed through the currently-ready endpoints never fails.
"""

from __future__ import annotations

import asyncio

from controllers.constants import RAYSERVICES
from kuberay_py.client.resources import PODS
from tests.rayservice_harness import new_ray_version

from .conftest import (
    InProcessOperator,
    OperatorFactory,
    Rig,
    Traffic,
    eventually,
    put_serve_config,
    rayservice,
    serve_config,
)

SERVE_SVC = "rs-serve-svc"


async def _converged(rig: Rig) -> tuple[str, str, list[str]]:
    svc = await rig.wait_ready("rs", endpoints=4)
    cluster = svc["status"]["activeServiceStatus"]["rayClusterName"]
    head = (await rig.pods(cluster, "head"))[0]
    workers = sorted(p["metadata"]["name"] for p in await rig.pods(cluster, "worker"))
    assert len(workers) == 3
    await rig.wait_ready_pods(SERVE_SVC, {head["metadata"]["name"], *workers})
    return cluster, head["status"]["podIP"], workers


async def test_endpoints_follow_worker_proxies_and_user_serve_deploys_with_no_operator(rig: Rig) -> None:
    async with InProcessOperator(rig) as operator:
        await rig.client.create(RAYSERVICES, rayservice(), rig.namespace)
        cluster, head_ip, workers = await _converged(rig)
        await operator.stop()
    head = (await rig.pods(cluster, "head"))[0]["metadata"]["name"]
    everyone = {head, *workers}
    frozen = await rig.rs()

    async with Traffic(rig, SERVE_SVC, max_seconds=60, max_requests=6000) as traffic:
        # (1) one worker's Serve proxy fails its health check: the kubelet takes it out...
        sick = workers[0]
        rig.runtime.faults(rig.namespace, sick).proxy_unhealthy = True
        await rig.wait_ready_pods(SERVE_SVC, everyone - {sick})
        await traffic.flows(50, "traffic without the sick worker")
        # ...and puts it back once it recovers
        rig.runtime.faults(rig.namespace, sick).proxy_unhealthy = False
        await rig.wait_ready_pods(SERVE_SVC, everyone)

        # (2) a user scales the app down with `serve deploy` (straight to the dashboard): the two
        # workers that lose their replica drain, fail readiness and leave the endpoints
        await put_serve_config(head_ip, serve_config(1))
        left = await rig.wait_ready_pods(SERVE_SVC, 2)
        assert head in left and len(left & set(workers)) == 1
        await traffic.flows(50, "traffic through head + 1 worker")

        # (3) and back up: the replicas come back onto the workers, whose proxies pass readiness again
        await put_serve_config(head_ip, serve_config(3))
        await rig.wait_ready_pods(SERVE_SVC, everyone)
        await traffic.flows(50, "traffic through all 4 again")

    report = traffic.report
    report.assert_all_served(150)
    assert report.min_endpoints is not None and report.min_endpoints >= 2
    assert report.pods_hit == everyone
    # nobody reconciled the RayService meanwhile: all of the above was the kubelet's doing
    after = await rig.rs()
    assert after["metadata"]["resourceVersion"] == frozen["metadata"]["resourceVersion"]
    assert after["status"]["numServeEndpoints"] == 4  # the operator's last word, now stale


async def test_deleted_worker_leaves_the_endpoints_after_the_operator_was_killed(
    rig: Rig, operator_processes: OperatorFactory
) -> None:
    operator = operator_processes(rig)
    await rig.client.create(RAYSERVICES, rayservice(), rig.namespace)
    cluster, _head_ip, workers = await _converged(rig)
    operator.kill9()
    head = (await rig.pods(cluster, "head"))[0]["metadata"]["name"]

    async with Traffic(rig, SERVE_SVC, max_seconds=40, max_requests=4000) as traffic:
        await traffic.flows(30, "traffic before the delete")
        gone = workers[1]
        # a short grace period keeps the test fast: its replica has nowhere to migrate to
        # (max_replicas_per_node 1), so the node would otherwise drain for the default 30 s
        await rig.client.delete(PODS, gone, rig.namespace, grace_period_seconds=3)
        # terminating: not ready at once (the drain makes its proxy fail readiness too)...
        await rig.wait_ready_pods(SERVE_SVC, {head, *workers} - {gone})
        # ...and out of the slices entirely once the kubelet has finished it
        await eventually(lambda: _not_listed(rig, gone), f"{gone} removed from the EndpointSlices")
        await traffic.flows(50, "traffic after the delete")

    report = traffic.report
    report.assert_all_served(80)
    # no operator: the deleted worker was not replaced
    names = {p["metadata"]["name"] for p in await rig.pods(cluster, "worker")}
    assert names == set(workers) - {gone}
    assert not operator.running()


async def _not_listed(rig: Rig, pod: str) -> bool:
    return pod not in await rig.listed_pods(SERVE_SVC)


async def test_head_proxy_failure_while_down_is_caught_up_by_the_next_operator(rig: Rig) -> None:
    """The one thing that needs the operator: the head's place in the serve Service.

    The head cannot carry a Serve readiness probe (it would also leave the head Service the
    workers need), so its ``ray.io/serve`` label is the operator's. While no operator runs, a head
    whose proxy fails stays selected; the next operator to start corrects it at once.
    """
    async with InProcessOperator(rig) as operator:
        await rig.client.create(RAYSERVICES, rayservice(), rig.namespace)
        cluster, _head_ip, workers = await _converged(rig)
        await operator.stop()
    head = (await rig.pods(cluster, "head"))[0]["metadata"]["name"]
    rig.runtime.faults(rig.namespace, head).proxy_unhealthy = True
    # the kubelet keeps probing the head (raylet and GCS: fine) and changes nothing
    kubelet = rig.env.simulator.kubelet
    rounds = kubelet.probe_rounds(rig.namespace, head, "readiness")
    await asyncio.wait_for(kubelet.wait_for_probe_rounds(rig.namespace, head, "readiness", rounds + 3), 30)
    assert await rig.ready_pods(SERVE_SVC) == {head, *workers}
    labels = (await rig.client.get(PODS, head, rig.namespace))["metadata"]["labels"]
    assert labels["ray.io/serve"] == "true"

    async with InProcessOperator(rig):
        await rig.wait_ready_pods(SERVE_SVC, set(workers))
        await rig.wait_ready("rs", endpoints=3)
        labels = (await rig.client.get(PODS, head, rig.namespace))["metadata"]["labels"]
        assert labels["ray.io/serve"] == "false"


async def test_upgrade_paused_by_an_operator_outage_keeps_serving_and_resumes(rig: Rig) -> None:
    """Down mid-upgrade: the old cluster keeps serving, the next operator finishes the switch."""
    async with InProcessOperator(rig) as operator:
        svc = rayservice(delay=2)
        await rig.client.create(RAYSERVICES, svc, rig.namespace)
        old, _head_ip, _workers = await _converged(rig)
        await rig.edit_rayservice("rs", new_ray_version)

        async def pending() -> str | None:
            status = (await rig.rs()).get("status") or {}
            name: str | None = (status.get("pendingServiceStatus") or {}).get("rayClusterName")
            return name if name and len(await rig.pods(name)) == 4 else None

        new = await eventually(pending, "a pending cluster with all 4 Pods created")
        await operator.stop()

    old_pods = {p["metadata"]["name"] for p in await rig.pods(old)}
    async with Traffic(rig, SERVE_SVC, max_seconds=60, max_requests=6000) as traffic:
        # the new cluster's head comes up on its own (kubelet + Ray), but nobody submits the
        # serve config to it or switches traffic over
        await eventually(lambda: _head_ready(rig, new), f"{new}'s head Running and Ready")
        await traffic.flows(100, "traffic while the upgrade is paused")
        assert await rig.ready_pods(SERVE_SVC) == old_pods

        async with InProcessOperator(rig):

            async def promoted() -> bool:
                status = (await rig.rs()).get("status") or {}
                return bool((status.get("activeServiceStatus") or {}).get("rayClusterName") == new)

            await eventually(promoted, f"{new} promoted by the next operator")
            new_pods = {p["metadata"]["name"] for p in await rig.pods(new)}
            await rig.wait_ready_pods(SERVE_SVC, new_pods)
            await traffic.flows(50, "traffic on the new cluster")

    report = traffic.report
    report.assert_all_served(150)
    assert report.min_endpoints is not None and report.min_endpoints >= 1


async def _head_ready(rig: Rig, cluster: str) -> bool:
    heads = await rig.pods(cluster, "head")
    conditions: list[dict[str, str]] = (heads[0].get("status") or {}).get("conditions") or [] if heads else []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
