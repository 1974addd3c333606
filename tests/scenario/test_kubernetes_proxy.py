"""``--use-kubernetes-proxy`` end to end: a RayJob and a RayService whose dashboards the operator
reaches only through the API server's ``services/proxy`` of each head Service, and whose head
Serve proxy it checks through ``pods/proxy``.

envtest + the simulator (fake Ray heads on pod-network addresses): the operator's dashboard
factories point at the API server, which forwards to the head Service's ready endpoint. The
API server's request log (kube-apiserver's audit log in real mode) proves the traffic went through
``services/proxy`` and ``pods/proxy``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from controllers.constants import RAYSERVICES
from controllers.ray.dashboard import DashboardClientFactory
from controllers.raysim import RayPodRuntime
from kuberay_py.client import Client
from kuberay_py.envtest import Environment
from tests.polling import condition, eventually
from tests.rayjob_harness import TIMINGS, JobScenario, rayjob, simulated_environment, start_job_operator
from tests.rayservice_harness import rayservice, start_operator, stop_operator


@pytest_asyncio.fixture(loop_scope="session")
async def proxied() -> AsyncIterator[JobScenario]:
    runtime = RayPodRuntime(timings=TIMINGS)
    async with simulated_environment(runtime) as env:
        config = env.client_config
        jobs_op = start_job_operator(config, dashboards=DashboardClientFactory(kubernetes_proxy=config))
        serve_op = start_operator(
            config, raycluster=False, dashboard_factory=DashboardClientFactory(kubernetes_proxy=config)
        )
        client: Client = env.new_client()
        ns = await env.create_namespace()
        try:
            yield JobScenario(env, client, ns, runtime, jobs_op)
        finally:
            await stop_operator(serve_op)
            await jobs_op.stop()
            await client.close()


async def proxied_calls(env: Environment, namespace: str) -> int:
    return sum(
        1
        for r in await env.request_log.records()
        if r.resource == "services/proxy" and r.namespace == namespace and r.status < 300
    )


async def test_rayjob_and_rayservice_reach_their_dashboards_through_the_api_server(
    proxied: JobScenario,
) -> None:
    sc = proxied
    await sc.create(rayjob("viaproxy", "echo hello && sleep 1"))
    done = await sc.until("viaproxy", {"jobDeploymentStatus": "Complete"})
    st = done["status"]
    assert (st["jobStatus"], st["succeeded"]) == ("SUCCEEDED", 1)
    assert sc.jobs_of(st["rayClusterName"]).submissions == 1
    # status.dashboardURL stays the in-cluster address (the submitter and users read it).
    assert st["dashboardURL"] == f"{st['rayClusterName']}-head-svc.{sc.namespace}.svc.cluster.local:8265"
    assert await proxied_calls(sc.env, sc.namespace) > 0

    await sc.client.create(RAYSERVICES, rayservice("rs", workers=1, replicas=1), sc.namespace)

    async def ready() -> dict | None:
        svc = await sc.client.get(RAYSERVICES, "rs", sc.namespace)
        return svc if condition(svc, "Ready").get("status") == "True" else None

    svc = await eventually(ready, "RayService rs Ready through the proxy", 60.0)
    apps = svc["status"]["activeServiceStatus"]["applicationStatuses"]
    assert apps["fruit_app"]["status"] == "RUNNING"
    cluster = svc["status"]["activeServiceStatus"]["rayClusterName"]
    records = await sc.env.request_log.records()
    serve_apps = f"/services/{cluster}-head-svc:dashboard/proxy/api/serve/applications/"
    assert any(serve_apps in r.path for r in records)
    # The head's Serve proxy health check went through pods/proxy too (KubeRay's proxied
    # HTTP-proxy client).
    assert any(
        r.resource == "pods/proxy" and r.path.endswith(":8000/proxy/-/healthz") and r.status == 200
        for r in records
    )
