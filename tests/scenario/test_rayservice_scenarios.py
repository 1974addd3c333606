"""Further RayService scenarios: upgrade under traffic, in-place config update, rejected config,
a hanging dashboard, and an unhealthy head proxy."""

from __future__ import annotations

import aiohttp
import yaml

from controllers.constants import RAYCLUSTERS, RAYSERVICES
from kuberay_py.client import NotFound
from kuberay_py.client.resources import PODS
from tests.rayservice_harness import new_ray_version, rayservice, serve_config, with_serve_config

from .conftest import Scenario, Traffic, condition, eventually, wait_ready


async def test_zero_downtime_upgrade_under_traffic(scenario: Scenario) -> None:
    sc = scenario
    svc = rayservice()
    svc["spec"]["rayClusterDeletionDelaySeconds"] = 3
    await sc.client.create(RAYSERVICES, svc, sc.namespace)
    svc = await wait_ready(sc, "rs", endpoints=4)
    old = svc["status"]["activeServiceStatus"]["rayClusterName"]

    async with Traffic(sc, "rs-serve-svc", "/fruit", max_seconds=40, max_requests=5000) as traffic:
        await sc.edit_rayservice("rs", new_ray_version)

        async def promoted() -> dict | None:
            cur = await sc.get("rs")
            name = cur["status"]["activeServiceStatus"]["rayClusterName"]
            return (
                cur
                if name != old and not cur["status"].get("pendingServiceStatus", {}).get("rayClusterName")
                else None
            )

        cur = await eventually(promoted, "the new cluster promoted", timeout=40)
        new = cur["status"]["activeServiceStatus"]["rayClusterName"]

        async def old_deleted() -> bool:
            try:
                await sc.client.get(RAYCLUSTERS, old, sc.namespace)
            except NotFound:
                return True
            return False

        await eventually(old_deleted, "the old cluster deleted after its delay")
        await wait_ready(sc, "rs", endpoints=4)
    report = traffic.report
    assert report.sent > 100
    assert report.failures == []
    assert report.min_endpoints is not None and report.min_endpoints >= 1  # never without a ready endpoint
    endpoints = await sc.ready_endpoints("rs-serve-svc")
    new_pods = {p["metadata"]["name"] for p in await sc.pods(new)}
    assert {pod for _, _, pod in endpoints} <= new_pods


async def test_in_place_serve_config_update(scenario: Scenario) -> None:
    sc = scenario
    await sc.client.create(RAYSERVICES, rayservice(), sc.namespace)
    svc = await wait_ready(sc, "rs", endpoints=4)
    cluster = svc["status"]["activeServiceStatus"]["rayClusterName"]
    config = yaml.safe_load(svc["spec"]["serveConfigV2"])
    config["applications"][0]["deployments"][0]["user_config"] = {"price": 5}
    await sc.edit_rayservice("rs", with_serve_config(config))

    async def resubmitted() -> bool:
        # repeats of one event are aggregated into series.count (events.k8s.io/v1)
        updates = [e for e in await sc.events("rs") if e["reason"] == "UpdatedServeApplications"]
        return sum(int((e.get("series") or {}).get("count", 1)) for e in updates) >= 2

    await eventually(resubmitted, what="a second UpdatedServeApplications")
    cur = await wait_ready(sc, "rs", endpoints=4)
    assert cur["status"]["activeServiceStatus"]["rayClusterName"] == cluster
    assert len((await sc.client.list(RAYCLUSTERS, sc.namespace))["items"]) == 1

    async def new_price_served() -> bool:
        ip, port, _ = (await sc.ready_endpoints("rs-serve-svc"))[0]
        async with aiohttp.ClientSession() as session, session.get(f"http://{ip}:{port}/fruit") as resp:
            return bool(resp.status == 200 and (await resp.json())["price"] == 5)

    await eventually(new_price_served, what="the new user_config served")


async def test_rejected_serve_config_warns_while_active_keeps_serving(scenario: Scenario) -> None:
    sc = scenario
    await sc.client.create(RAYSERVICES, rayservice(), sc.namespace)
    svc = await wait_ready(sc, "rs", endpoints=4)
    cluster = svc["status"]["activeServiceStatus"]["rayClusterName"]
    broken = serve_config(3)
    del broken["applications"][0]["import_path"]  # Ray answers 400 "Field required"
    async with Traffic(sc, "rs-serve-svc", "/fruit", max_seconds=20, max_requests=400) as traffic:
        await sc.edit_rayservice("rs", with_serve_config(broken))

        async def rejected() -> dict | None:
            cur = await sc.get("rs")
            return cur if condition(cur, "ServeConfigValid").get("reason") == "ServeConfigRejected" else None

        cur = await eventually(rejected, what="ServeConfigValid=False")
        await eventually(lambda: traffic.sent_at_least(100), what="traffic after the rejection")
    assert "import_path" in condition(cur, "ServeConfigValid")["message"]
    assert condition(cur, "Ready")["status"] == "True"
    assert cur["status"]["activeServiceStatus"]["rayClusterName"] == cluster
    warnings = [e for e in await sc.events("rs") if e["reason"] == "FailedToUpdateServeApplications"]
    assert len(warnings) == 1 and warnings[0]["type"] == "Warning"
    assert traffic.report.failures == []


async def test_hanging_dashboard_does_not_block_other_rayservices(scenario: Scenario) -> None:
    sc = scenario
    first = rayservice()
    first["metadata"] = {"name": "stuck"}
    await sc.client.create(RAYSERVICES, first, sc.namespace)

    async def head_running() -> str:
        cur = await sc.get("stuck")
        name = (cur.get("status") or {}).get("pendingServiceStatus", {}).get("rayClusterName")
        if not name:
            return ""
        heads = await sc.pods(name, "head")
        return name if heads and heads[0]["status"].get("podIP") else ""

    stuck_cluster = await eventually(head_running, what="the stuck service's head")
    head_pod = (await sc.pods(stuck_cluster, "head"))[0]["metadata"]["name"]
    faults = await eventually(lambda: _faults(sc, head_pod), what="the fake Ray node of the head")
    faults.dashboard_hang = True

    second = rayservice()
    second["metadata"] = {"name": "healthy"}
    await sc.client.create(RAYSERVICES, second, sc.namespace)
    await wait_ready(sc, "healthy", endpoints=4)
    stuck = await sc.get("stuck")
    assert condition(stuck, "Ready").get("status") != "True"

    faults.dashboard_hang = False
    await wait_ready(sc, "stuck", endpoints=4)


async def _faults(sc: Scenario, pod: str):  # type: ignore[no-untyped-def]
    try:
        return sc.runtime.faults(sc.namespace, pod)
    except KeyError:
        return None


async def test_unhealthy_head_proxy_is_removed_from_the_serve_service(scenario: Scenario) -> None:
    sc = scenario
    await sc.client.create(RAYSERVICES, rayservice(), sc.namespace)
    svc = await wait_ready(sc, "rs", endpoints=4)
    cluster = svc["status"]["activeServiceStatus"]["rayClusterName"]
    head = (await sc.pods(cluster, "head"))[0]["metadata"]["name"]
    sc.runtime.faults(sc.namespace, head).proxy_unhealthy = True

    async def label(value: str) -> bool:
        pod = await sc.client.get(PODS, head, sc.namespace)
        return bool(pod["metadata"]["labels"].get("ray.io/serve") == value)

    await eventually(lambda: label("false"), what="head label false")
    await wait_ready(sc, "rs", endpoints=3)
    assert head not in {pod for _, _, pod in await sc.ready_endpoints("rs-serve-svc")}

    sc.runtime.faults(sc.namespace, head).proxy_unhealthy = False
    await eventually(lambda: label("true"), what="head label true again")
    await wait_ready(sc, "rs", endpoints=4)


async def test_ray_token_auth_end_to_end(scenario: Scenario) -> None:
    """Ray started with RAY_AUTH_MODE=token: the dashboard answers only with x-ray-authorization."""
    sc = scenario
    svc = rayservice()
    env = [{"name": "RAY_AUTH_MODE", "value": "token"}, {"name": "RAY_AUTH_TOKEN", "value": "tok-123"}]
    spec = svc["spec"]["rayClusterConfig"]
    spec["headGroupSpec"]["template"]["spec"]["containers"][0]["env"] = env
    spec["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["env"] = env
    await sc.client.create(RAYSERVICES, svc, sc.namespace)
    ready = await wait_ready(sc, "rs", endpoints=4)
    assert ready["status"]["activeServiceStatus"]["applicationStatuses"]["fruit_app"]["status"] == "RUNNING"
