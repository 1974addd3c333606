"""Incremental upgrade interrupted: the spec reverted (rollback), changed to a third spec, and the
operator killed mid-upgrade. Continuous traffic through the Gateway throughout, 0 failed requests.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import Callable
from typing import Any

from controllers.constants import RAYCLUSTERS, RAYSERVICES
from kuberay_py.client import NotFound
from tests.polling import condition
from tests.rayservice_harness import start_operator
from tests.scenario.incremental_harness import (
    GatewayTraffic,
    Upgrade,
    incremental_service,
    new_version,
    open_upgrade,
    snapshot,
    until,
)

NAME = "inc"
BATCH = 40


async def reach(up: Upgrade, what: str, pred: Callable[[tuple[Any, ...]], bool]) -> dict[str, Any]:
    """The RayService once (aTC, pTC, aTRP, pTRP) satisfies ``pred``."""

    async def probe() -> dict[str, Any] | None:
        svc = await up.get(NAME)
        snap = snapshot(svc)
        return svc if None not in snap and pred(snap) else None

    return dict(await until(what, probe, timeout=90))


async def settled_on(up: Upgrade, cluster: str) -> dict[str, Any]:
    """No upgrade or rollback left, ``cluster`` active with all traffic, the route on it alone."""

    async def done() -> dict[str, Any] | None:
        svc = await up.get(NAME)
        status = svc.get("status") or {}
        active = status.get("activeServiceStatus") or {}
        if active.get("rayClusterName") != cluster or (status.get("pendingServiceStatus") or {}).get(
            "rayClusterName"
        ):
            return None
        if (
            condition(svc, "RollbackInProgress")
            or condition(svc, "UpgradeInProgress").get("status") != "False"
        ):
            return None
        route = await up.route(NAME)
        backends = [
            (b["name"], b.get("weight"))
            for b in (route or {}).get("spec", {}).get("rules", [{}])[0].get("backendRefs", [])
        ]
        return (
            svc
            if backends == [(f"{cluster}-serve-svc", 100)] and active.get("trafficRoutedPercent") == 100
            else None
        )

    return dict(await until(f"settled on {cluster}", done, timeout=90))


async def gone(up: Upgrade, cluster: str) -> bool:
    try:
        await up.client.get(RAYCLUSTERS, cluster, up.namespace)
    except NotFound:
        return True
    return False


async def start(up: Upgrade) -> tuple[dict[str, Any], str, str]:
    await up.client.create(RAYSERVICES, incremental_service(NAME, price=3), up.namespace)
    svc = await up.serving(NAME)
    return svc, svc["status"]["activeServiceStatus"]["rayClusterName"], await up.gateway_url(NAME)


async def upgrade_to_weight(up: Upgrade, weight: int, what: str) -> dict[str, Any]:
    """Start the upgrade (price 3 -> 4, a new cluster) and return the RayService once ``weight``
    percent of the traffic is routed to the new cluster."""
    await up.update_spec(NAME, lambda svc: new_version(svc, price=4, cpu="600m"))
    return await reach(up, what, lambda s: s[3] == weight)


async def test_reverting_the_spec_mid_upgrade_rolls_back_step_by_step() -> None:
    async with open_upgrade() as up:
        original, old_cluster, url = await start(up)
        async with GatewayTraffic(url) as traffic:
            mid = await upgrade_to_weight(up, 50, "half the traffic on the new cluster")
            new_cluster = mid["status"]["pendingServiceStatus"]["rayClusterName"]
            statuses: list[dict[str, Any]] = []
            recorder = asyncio.create_task(up.record(NAME, statuses))  # every status written from here
            await up.update_spec(NAME, lambda svc: {**svc, "spec": copy.deepcopy(original["spec"])})

            async def rolling_back() -> dict[str, Any] | None:
                svc = await up.get(NAME)
                return svc if condition(svc, "RollbackInProgress").get("status") == "True" else None

            svc = await until("rollback started", rolling_back)
            assert condition(svc, "RollbackInProgress")["reason"] == "DesiredClusterSpecChanged"
            assert condition(svc, "RollbackInProgress")["message"] == (
                "Goal state reverted to original cluster, rolling back."
            )

            async def back() -> dict[str, Any] | None:
                current = await up.get(NAME)
                return (
                    await settled_on(up, old_cluster)
                    if not condition(current, "RollbackInProgress")
                    else None
                )

            final = await until("rollback complete", back, timeout=90)
            async with traffic.paused():
                assert await up.share(url, BATCH, '"price": 3') == 1.0  # all traffic back on A
        recorder.cancel()
        assert traffic.failures == [] and traffic.served(), (traffic.failures[:5], traffic.sent)
        # Step by step: the weight on B only goes down, A's capacity only up, B's only down.
        seen: list[tuple[Any, ...]] = []
        for st in statuses:
            snap = snapshot({"status": st})
            rolling = any(cd.get("type") == "RollbackInProgress" for cd in st.get("conditions") or [])
            if rolling and None not in snap and (not seen or seen[-1] != snap):
                seen.append(snap)
        rollback = seen
        for before, after in itertools.pairwise(rollback):
            assert after[0] >= before[0] and after[1] <= before[1] and after[3] <= before[3], seen
        assert {s[3] for s in rollback} >= {50, 25, 0}, seen
        assert condition(final, "UpgradeInProgress")["reason"] == "NoPendingCluster"
        assert final["status"]["activeServiceStatus"]["targetCapacity"] == 100
        await until("rolled-back cluster deleted", lambda: gone(up, new_cluster))


async def test_a_third_spec_mid_upgrade_rolls_back_then_upgrades_to_it() -> None:
    async with open_upgrade() as up:
        _, old_cluster, url = await start(up)
        async with GatewayTraffic(url) as traffic:
            mid = await upgrade_to_weight(up, 25, "a quarter of the traffic on the new cluster")
            second = mid["status"]["pendingServiceStatus"]["rayClusterName"]
            await up.update_spec(NAME, lambda svc: new_version(svc, price=5, cpu="700m"))

            async def third_started() -> dict[str, Any] | None:
                svc = await up.get(NAME)
                if condition(svc, "RollbackInProgress").get("message") == (
                    "Goal state changed mid-upgrade, rolling back to original cluster."
                ):
                    return svc
                pending = (svc.get("status") or {}).get("pendingServiceStatus") or {}
                return svc if pending.get("rayClusterName") not in (None, second) else None

            await until("rollback to the original cluster started", third_started)

            async def upgraded_to_third() -> dict[str, Any] | None:
                svc = await up.get(NAME)
                active = (svc.get("status") or {}).get("activeServiceStatus") or {}
                if active.get("rayClusterName") in (None, old_cluster, second):
                    return None
                return await settled_on(up, active["rayClusterName"])

            await until("the third spec serving", upgraded_to_third, timeout=120)
            async with traffic.paused():
                assert await up.share(url, BATCH, '"price": 5') == 1.0
        assert traffic.failures == [] and traffic.served(), (traffic.failures[:5], traffic.sent)
        for cluster in (old_cluster, second):
            await until(f"{cluster} deleted", lambda cluster=cluster: gone(up, cluster))


async def test_operator_killed_mid_upgrade_resumes_at_its_step() -> None:
    async with open_upgrade() as up:
        _, old_cluster, url = await start(up)
        async with GatewayTraffic(url) as traffic:
            killed_at = snapshot(await upgrade_to_weight(up, 25, "a quarter of the traffic moved"))
            # No graceful shutdown: the task dies where it is, with its in-memory state (submitted
            # configs, deletion timers) lost, as with SIGKILL.
            up.operator.task.cancel()
            await asyncio.gather(up.operator.task, return_exceptions=True)
            await up.operator.manager.client.close()
            async with up.pump.hold(), traffic.paused():
                # The old cluster still runs the old version: its share answers price 3.
                assert await up.share(url, BATCH, '"price": 4') == 0.25
            up.operator = start_operator(up.env.client_config, clock=up.clock, serve_poll_interval=0.5)
            seen: list[tuple[Any, ...]] = []

            async def promoted() -> dict[str, Any] | None:
                svc = await up.get(NAME)
                snap = snapshot(svc)
                pending = (svc.get("status") or {}).get("pendingServiceStatus") or {}
                if pending.get("rayClusterName") and (not seen or seen[-1] != snap):
                    seen.append(snap)
                    weight = snap[3]
                    if weight in (50, 75):
                        async with up.pump.hold(), traffic.paused():
                            share = await up.share(url, BATCH, '"price": 4')
                        # The restarted operator never sent the new config to the old cluster.
                        assert abs(share - weight / 100) <= 0.05, (weight, share)
                active = (svc.get("status") or {}).get("activeServiceStatus") or {}
                if active.get("rayClusterName") in (None, old_cluster):
                    return None
                return await settled_on(up, active["rayClusterName"])

            await until("upgrade finished after the restart", promoted, timeout=120)
        assert traffic.failures == [] and traffic.served(), (traffic.failures[:5], traffic.sent)
        # It resumed where it was: traffic never went back below the step it had reached.
        assert seen, "no step of the upgrade observed after the restart"
        assert all(s[3] is None or s[3] >= killed_at[3] for s in seen), (killed_at, seen)
        await until("old cluster deleted", lambda: gone(up, old_cluster))
