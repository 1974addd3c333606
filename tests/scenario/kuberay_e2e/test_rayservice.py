"""Mirrors of KubeRay v1.7.0 ``e2erayservice/rayservice_validation_test.go``:
TestRayServiceValidation and TestRayServiceManagedBy, with KubeRay's sample RayService (its
``fruit_app`` and ``math_app``), run by the RayService scenario harness (tests/scenario)."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from controllers.constants import RAYCLUSTERS, RAYSERVICES
from kuberay_py.client import ApiError
from kuberay_py.client.resources import PODS, SERVICES
from tests.live import update_live

from ..conftest import Scenario, condition, eventually, sample, wait_ready


def sample_service(name: str, **spec: Any) -> dict[str, Any]:
    svc = sample("ray-service.sample.yaml")
    svc["metadata"] = {"name": name}
    svc["spec"].update(spec)
    return svc


async def test_ray_service_validation__ray_service_name_too_long_with_48_characters(
    scenario: Scenario,
) -> None:
    """rayservice_validation_test.go:TestRayServiceValidation/"RayService name too long with 48
    characters"."""
    sc = scenario
    name = "a" * 48
    await sc.client.create(RAYSERVICES, sample_service(name), sc.namespace)

    async def rejected() -> bool:
        ready = condition(await sc.get(name), "Ready")
        return ready.get("status") == "False" and ready.get("reason") == "ValidationFailed"

    await eventually(rejected, "Ready=False, ValidationFailed")


async def test_ray_service_managed_by(scenario: Scenario) -> None:
    """rayservice_validation_test.go:TestRayServiceManagedBy, its three subtests ("Successful
    creation ... managed by Kuberay Operator", "Creation of RayService skipped, managed by Kueue",
    "Failed creation ..., managed by external non supported controller"). The Kueue one is
    created first; once the KubeRay one (queued after it) is Ready, the first must still be
    untouched (Go: ``Consistently`` for 3 s)."""
    sc = scenario
    await sc.client.create(
        RAYSERVICES, sample_service("rayservice-skip", managedBy="kueue.x-k8s.io/multikueue"), sc.namespace
    )
    await sc.client.create(
        RAYSERVICES, sample_service("rayservice-ok", managedBy="ray.io/kuberay-operator"), sc.namespace
    )
    await wait_ready(sc, "rayservice-ok", timeout=60)
    skipped = await sc.get("rayservice-skip")
    status = skipped.get("status") or {}
    assert condition(skipped, "Ready") == {}
    assert status.get("serviceStatus", "") == ""
    assert (status.get("activeServiceStatus") or {}).get("rayClusterName", "") == ""
    assert (status.get("pendingServiceStatus") or {}).get("rayClusterName", "") == ""
    with pytest.raises(ApiError) as immutable:
        await sc.client.patch(
            RAYSERVICES, "rayservice-skip", {"spec": {"managedBy": "ray.io/kuberay-operator"}}, sc.namespace
        )
    assert immutable.value.status == 422
    assert (await sc.get("rayservice-skip"))["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    clusters = (await sc.client.list(RAYCLUSTERS, sc.namespace))["items"]
    assert not [c for c in clusters if c["metadata"]["name"].startswith("rayservice-skip")]
    await sc.client.delete(RAYSERVICES, "rayservice-skip", sc.namespace)
    with pytest.raises(ApiError) as invalid:
        await sc.client.create(
            RAYSERVICES,
            sample_service("rayservice-fail", managedBy="controller.com/not-supported"),
            sc.namespace,
        )
    assert invalid.value.status == 422


# --- rayservice_in_place_update_test.go (outside issue 18's selection) ------------------------


async def post(ip: str, port: int, path: str, body: Any) -> str:
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"http://{ip}:{port}{path}", json=body, timeout=aiohttp.ClientTimeout(total=5)) as resp,
    ):
        return await resp.text()


async def curl_service(sc: Scenario, name: str, path: str, body: Any) -> set[str]:
    """CurlRayServicePod: what ``<name>-serve-svc`` answers; every ready endpoint is asked (kube-proxy
    may route to any of them), so one answer means they all agree."""
    endpoints = await sc.ready_endpoints(f"{name}-serve-svc")
    return {await post(ip, port, path, body) for ip, port, _ in endpoints}


async def answers(sc: Scenario, name: str, fruit: str, calc: str) -> None:
    async def agreed() -> bool:
        got = (
            await curl_service(sc, name, "/fruit", ["MANGO", 2]),
            await curl_service(sc, name, "/calc", ["MUL", 3]),
        )
        return got == ({fruit}, {calc})

    await eventually(
        agreed, f"/fruit -> {fruit}, /calc -> {calc}", 60, tolerate=(aiohttp.ClientError, OSError)
    )


async def _ready_sample(sc: Scenario, **spec: Any) -> dict[str, Any]:
    await sc.client.create(RAYSERVICES, sample_service("rayservice-sample", **spec), sc.namespace)
    await wait_ready(sc, "rayservice-sample", timeout=60)
    await answers(sc, "rayservice-sample", "6", "15 pizzas please!")
    return await sc.get("rayservice-sample")


async def test_ray_service_in_place_update(scenario: Scenario) -> None:
    """rayservice_in_place_update_test.go:TestRayServiceInPlaceUpdate: a user_config change is
    served by the same cluster."""
    sc = scenario
    await _ready_sample(sc)

    def reprice(svc: dict[str, Any]) -> None:
        config = (
            svc["spec"]["serveConfigV2"].replace("price: 3", "price: 4").replace("factor: 5", "factor: 3")
        )
        svc["spec"]["serveConfigV2"] = config

    await update_live(sc.client, RAYSERVICES, "rayservice-sample", sc.namespace, reprice)
    await answers(sc, "rayservice-sample", "8", "9 pizzas please!")


def _price_and_env(svc: dict[str, Any]) -> None:
    """The edit both TestUpdateServeConfigAndRayClusterSpec tests make: a price and a head env var."""
    svc["spec"]["serveConfigV2"] = svc["spec"]["serveConfigV2"].replace("price: 3", "price: 456")
    svc["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": "FOO", "value": "BAR"}
    ]


async def test_update_serve_config_and_ray_cluster_spec(scenario: Scenario) -> None:
    """rayservice_in_place_update_test.go:TestUpdateServeConfigAndRayClusterSpec: a config and a
    cluster change at once upgrade to a new cluster serving the new config; the old one (held
    by a finalizer) still serves the old config."""
    sc = scenario
    svc = await _ready_sample(sc)
    old_name = svc["status"]["activeServiceStatus"]["rayClusterName"]

    def hold(old: dict[str, Any]) -> None:
        old["metadata"]["finalizers"] = [*(old["metadata"].get("finalizers") or []), "no-existed-finalizer"]

    await update_live(sc.client, RAYCLUSTERS, old_name, sc.namespace, hold)
    await update_live(sc.client, RAYSERVICES, "rayservice-sample", sc.namespace, _price_and_env)

    async def switched() -> bool:
        cur = await sc.get("rayservice-sample")
        return (cur.get("status") or {}).get("activeServiceStatus", {}).get("rayClusterName") not in (
            None,
            old_name,
        )

    await eventually(switched, "the active cluster switched", 60)
    await answers(sc, "rayservice-sample", "912", "15 pizzas please!")
    (old_head,) = await sc.pods(old_name, "head")
    assert await post(old_head["status"]["podIP"], 8000, "/fruit", ["MANGO", 2]) == "6"
    await sc.client.patch(RAYCLUSTERS, old_name, {"metadata": {"finalizers": None}}, sc.namespace)


async def test_update_serve_config_and_ray_cluster_spec_with_upgrade_disabled(scenario: Scenario) -> None:
    """rayservice_in_place_update_test.go:TestUpdateServeConfigAndRayClusterSpecWithUpgradeDisabled:
    with upgradeStrategy None the new config is applied in place and the cluster is left alone."""
    sc = scenario
    svc = await _ready_sample(sc, upgradeStrategy={"type": "None"})
    name = svc["status"]["activeServiceStatus"]["rayClusterName"]

    async def settled() -> dict[str, Any] | None:
        """The RayCluster once its own status is final: the RayService can be Ready (its head
        serves) before the RayCluster controller has written its workers' readiness."""
        rc: dict[str, Any] = await sc.client.get(RAYCLUSTERS, name, sc.namespace)
        status = rc.get("status") or {}
        desired = status.get("desiredWorkerReplicas")
        final = status.get("state") == "ready" and status.get("readyWorkerReplicas") == desired
        return rc if final and status.get("availableWorkerReplicas") == desired else None

    old = await eventually(settled, "the RayCluster's status final")
    await update_live(sc.client, RAYSERVICES, "rayservice-sample", sc.namespace, _price_and_env)
    await answers(sc, "rayservice-sample", "912", "15 pizzas please!")
    after = await sc.client.get(RAYCLUSTERS, old["metadata"]["name"], sc.namespace)
    assert after == old  # KubeRay compares the whole object: not even a status write


# --- rayservice_suspend_test.go (outside issue 18's selection) --------------------------------


def is_true(svc: dict[str, Any], type_: str) -> bool:
    return condition(svc, type_).get("status") == "True"


async def until_service(
    sc: Scenario, name: str, check: Any, what: str, timeout: float = 60
) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        svc = await sc.get(name)
        return svc if check(svc) else None

    return dict(await eventually(probe, f"{name}: {what}", timeout))


async def owned(sc: Scenario, name: str) -> tuple[list[Any], list[Any]]:
    """The RayClusters and Services labelled as originated from RayService ``name``."""
    selector = f"ray.io/originated-from-cr-name={name}"
    clusters = (await sc.client.list(RAYCLUSTERS, sc.namespace, label_selector=selector))["items"]
    services = (await sc.client.list(SERVICES, sc.namespace, label_selector=selector))["items"]
    return list(clusters), list(services)


async def seen(sc: Scenario, name: str) -> dict[str, Any]:
    """The RayService once its controller has reconciled the current spec (observedGeneration)
    -- what stands in for Go's ``Consistently`` windows after a spec change."""

    def current(svc: dict[str, Any]) -> bool:
        return (svc.get("status") or {}).get("observedGeneration") == svc["metadata"]["generation"]

    return await until_service(sc, name, current, "observedGeneration caught up")


async def set_suspend(sc: Scenario, name: str, value: bool) -> None:
    await sc.client.patch(RAYSERVICES, name, {"spec": {"suspend": value}}, sc.namespace)


async def test_ray_service_suspend_resume(scenario: Scenario) -> None:
    """rayservice_suspend_test.go:TestRayServiceSuspendResume."""
    sc = scenario
    name = "rayservice-suspend"
    await sc.client.create(RAYSERVICES, sample_service(name), sc.namespace)
    await wait_ready(sc, name, timeout=60)
    await answers(sc, name, "6", "15 pizzas please!")
    await set_suspend(sc, name, True)
    svc = await until_service(sc, name, lambda s: is_true(s, "Suspended"), "Suspended")
    for type_ in ("Suspending", "UpgradeInProgress", "RollbackInProgress"):
        cond = condition(svc, type_)
        assert (cond.get("status"), cond.get("reason")) == ("False", "SuspendComplete"), type_

    async def torn_down() -> bool:
        cur = await sc.get(name)
        st = cur.get("status") or {}
        clusters, services = await owned(sc, name)
        return (
            (st.get("activeServiceStatus") or {}).get("rayClusterName", "") == ""
            and (st.get("pendingServiceStatus") or {}).get("rayClusterName", "") == ""
            and st.get("numServeEndpoints", 0) == 0
            and st.get("serviceStatus", "") == ""
            and not is_true(cur, "Ready")
            and not clusters
            and not services
        )

    await eventually(torn_down, "clusters and Services deleted, status cleared", 60)
    await set_suspend(sc, name, False)
    await wait_ready(sc, name, timeout=60)
    svc = await until_service(sc, name, lambda s: not is_true(s, "Suspended"), "not Suspended")
    cond = condition(svc, "Suspended")
    assert (cond.get("status"), cond.get("reason")) == ("False", "RayServiceResumed")
    await answers(sc, name, "6", "15 pizzas please!")


async def test_ray_service_suspend_atomic(scenario: Scenario) -> None:
    """rayservice_suspend_test.go:TestRayServiceSuspendAtomic: once Suspending, flipping suspend
    back and forth changes nothing until the suspension completes; then it resumes on a new
    cluster."""
    sc = scenario
    name = "rayservice-suspend-atomic"
    await sc.client.create(RAYSERVICES, sample_service(name), sc.namespace)
    svc = await wait_ready(sc, name, timeout=60)
    original = svc["status"]["activeServiceStatus"]["rayClusterName"]
    await sc.client.patch(
        RAYCLUSTERS, original, {"metadata": {"finalizers": ["ray.io/test-suspend-block"]}}, sc.namespace
    )
    await set_suspend(sc, name, True)
    await until_service(sc, name, lambda s: is_true(s, "Suspending"), "Suspending")
    await set_suspend(sc, name, False)
    assert is_true(await seen(sc, name), "Suspending")
    await set_suspend(sc, name, True)
    assert is_true(await seen(sc, name), "Suspending")
    await set_suspend(sc, name, False)
    await sc.client.patch(RAYCLUSTERS, original, {"metadata": {"finalizers": None}}, sc.namespace)

    async def original_gone() -> bool:
        clusters, _ = await owned(sc, name)
        return original not in [c["metadata"]["name"] for c in clusters]

    await eventually(original_gone, "the original cluster deleted", 60)
    svc = await wait_ready(sc, name, timeout=60)
    active = svc["status"]["activeServiceStatus"]["rayClusterName"]
    assert active and active != original


async def test_ray_service_created_suspended(scenario: Scenario) -> None:
    """rayservice_suspend_test.go:TestRayServiceCreatedSuspended."""
    sc = scenario
    name = "rayservice-born-suspended"
    await sc.client.create(RAYSERVICES, sample_service(name, suspend=True), sc.namespace)
    await until_service(sc, name, lambda s: is_true(s, "Suspended"), "Suspended")
    svc = await seen(sc, name)
    st = svc.get("status") or {}
    assert (await owned(sc, name)) == ([], [])
    assert (st.get("activeServiceStatus") or {}).get("rayClusterName", "") == ""
    assert (st.get("pendingServiceStatus") or {}).get("rayClusterName", "") == ""
    assert st.get("numServeEndpoints", 0) == 0
    await set_suspend(sc, name, False)
    await wait_ready(sc, name, timeout=60)
    await until_service(sc, name, lambda s: not is_true(s, "Suspended"), "not Suspended")


async def test_ray_service_suspend_during_upgrade(scenario: Scenario) -> None:
    """rayservice_suspend_test.go:TestRayServiceSuspendDuringUpgrade."""
    sc = scenario
    name = "rayservice-suspend-upgrade"
    await sc.client.create(RAYSERVICES, sample_service(name), sc.namespace)
    svc = await wait_ready(sc, name, timeout=60)
    version = svc["spec"]["rayClusterConfig"]["rayVersion"] + "-upgrade"
    await sc.client.patch(
        RAYSERVICES, name, {"spec": {"rayClusterConfig": {"rayVersion": version}}}, sc.namespace
    )

    def pending(s: dict[str, Any]) -> bool:
        return bool(((s.get("status") or {}).get("pendingServiceStatus") or {}).get("rayClusterName"))

    await until_service(sc, name, pending, "a pending cluster")
    await set_suspend(sc, name, True)
    await until_service(sc, name, lambda s: is_true(s, "Suspended"), "Suspended")

    async def no_clusters() -> bool:
        return not (await owned(sc, name))[0]

    await eventually(no_clusters, "every cluster deleted", 60)
    await set_suspend(sc, name, False)
    svc = await wait_ready(sc, name, timeout=60)
    assert svc["spec"]["rayClusterConfig"]["rayVersion"].endswith("-upgrade")


# --- rayservice_redeploy_test.go (outside issue 18's selection) -------------------------------


async def test_redeploy_ray_serve(scenario: Scenario) -> None:
    """rayservice_redeploy_test.go:TestRedeployRayServe: the head Pod is deleted; the recreated
    head is the serve Service's one ready endpoint again and the apps answer as before (the
    RayCluster controller re-creates the head; the RayService controller redeploys Serve)."""
    sc = scenario
    svc = await _ready_sample(sc)
    cluster = svc["status"]["activeServiceStatus"]["rayClusterName"]
    (old_head,) = await sc.pods(cluster, "head")
    await sc.client.delete(PODS, old_head["metadata"]["name"], sc.namespace)

    async def new_endpoint() -> bool:
        endpoints = await sc.ready_endpoints("rayservice-sample-serve-svc")
        return len(endpoints) == 1 and endpoints[0][2] != old_head["metadata"]["name"]

    await eventually(new_endpoint, "one ready endpoint, on the new head", 60)
    await wait_ready(sc, "rayservice-sample", timeout=60)
    await answers(sc, "rayservice-sample", "6", "15 pizzas please!")
