"""NewClusterWithIncrementalUpgrade where it cannot run: bad options (KubeRay's messages) and a cluster
without the Gateway API (a clear condition and event; every other RayService keeps working)."""

from __future__ import annotations

from typing import Any

from controllers.constants import RAYSERVICES
from kuberay_py.client import NotFound
from kuberay_py.client.resources import EVENTS, GATEWAYS
from tests.polling import condition
from tests.rayservice_harness import rayservice
from tests.scenario.incremental_harness import incremental_service, open_upgrade, until


async def test_invalid_options_are_rejected_with_kuberays_messages() -> None:
    async with open_upgrade() as up:
        bad = incremental_service("bad", price=3, step=60, surge=50)
        await up.client.create(RAYSERVICES, bad, up.namespace)

        async def rejected() -> dict[str, Any] | None:
            svc = await up.get("bad")
            return svc if condition(svc, "Ready").get("reason") == "ValidationFailed" else None

        svc = await until("validation failed", rejected)
        assert (
            "stepSizePercent must be less than or equal to maxSurgePercent"
            in condition(svc, "Ready")["message"]
        )
        assert not (svc["status"].get("pendingServiceStatus") or {}).get("rayClusterName")


async def test_without_the_gateway_api_only_incremental_services_are_held() -> None:
    async with open_upgrade(gateway_api=False) as up:
        await up.client.create(RAYSERVICES, incremental_service("inc", price=3), up.namespace)
        await up.client.create(RAYSERVICES, rayservice("plain", workers=1, replicas=1), up.namespace)

        async def held() -> dict[str, Any] | None:
            svc = await up.get("inc")
            return svc if condition(svc, "GatewayAPIAvailable").get("status") == "False" else None

        svc = await until("GatewayAPIAvailable=False", held)
        cond = condition(svc, "GatewayAPIAvailable")
        assert cond["reason"] == "GatewayAPINotInstalled"
        assert "gateway.networking.k8s.io/v1" in cond["message"]
        assert not (svc["status"].get("pendingServiceStatus") or {}).get("rayClusterName")  # nothing created

        async def warned() -> list[dict[str, Any]]:
            items = (await up.client.list(EVENTS, up.namespace))["items"]
            return [
                e for e in items if e.get("reason") == "GatewayAPINotInstalled" and e["type"] == "Warning"
            ]

        (event,) = await until("Warning event", warned)
        assert event["regarding"]["name"] == "inc"

        async def plain_ready() -> dict[str, Any] | None:
            svc = await up.get("plain")
            return svc if condition(svc, "Ready").get("status") == "True" else None

        await until("the NewCluster RayService serves as usual", plain_ready)
        assert await up.client.served(GATEWAYS) is False


async def test_suspend_deletes_the_gateway_and_route_and_resume_rebuilds_them() -> None:
    async with open_upgrade() as up:
        await up.client.create(RAYSERVICES, incremental_service("sus", price=3), up.namespace)

        async def serving() -> dict[str, Any] | None:
            svc = await up.get("sus")
            return svc if condition(svc, "Ready").get("status") == "True" and await up.route("sus") else None

        await until("serving", serving)
        await up.update_spec("sus", lambda svc: {**svc, "spec": {**svc["spec"], "suspend": True}})

        async def suspended() -> dict[str, Any] | None:
            svc = await up.get("sus")
            if condition(svc, "Suspended").get("status") != "True":
                return None
            try:
                await up.client.get(GATEWAYS, "sus-gateway", up.namespace)
            except NotFound:
                return svc if await up.route("sus") is None else None
            return None

        await until("suspended without Gateway and HTTPRoute", suspended)
        await up.update_spec("sus", lambda svc: {**svc, "spec": {**svc["spec"], "suspend": False}})
        await until("serving again through a rebuilt Gateway and HTTPRoute", serving, timeout=60)
        assert await up.gateway_url("sus")
