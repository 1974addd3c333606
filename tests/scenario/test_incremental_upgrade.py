"""NewClusterWithIncrementalUpgrade end to end: the simulator's Gateway carries continuous traffic while
capacity and traffic move step by step (stepSizePercent 25, intervalSeconds 10 on a FakeClock,
maxSurgePercent 50), with no failed request.

Share tolerance: the simulator's Gateway splits by smooth weighted round robin, so a batch of 40
requests matches the weight to within one request; the test allows 5 percentage points.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from controllers.constants import RAYCLUSTERS, RAYSERVICES
from kuberay_py.client import NotFound
from kuberay_py.clock import parse_rfc3339
from tests.polling import condition
from tests.scenario.incremental_harness import (
    REPLICAS,
    GatewayTraffic,
    Upgrade,
    incremental_service,
    new_version,
    open_upgrade,
    snapshot,
    until,
)

NAME = "inc"
TOLERANCE = 0.05
BATCH = 40
OLD, NEW = '"price": 3', '"price": 4'


def backend_weights(route: dict[str, Any]) -> list[tuple[str, int]]:
    return [(b["name"], b.get("weight", 1)) for b in route["spec"]["rules"][0]["backendRefs"]]


async def route_programmed(up: Upgrade) -> dict[str, Any] | None:
    route = await up.route(NAME)
    if route is None:
        return None
    for parent in (route.get("status") or {}).get("parents") or []:
        accepted = next((c for c in parent.get("conditions") or [] if c["type"] == "Accepted"), {})
        if accepted.get("observedGeneration") == route["metadata"]["generation"]:
            return route
    return None


def pending_steps(statuses: list[dict[str, Any]], cluster: str) -> list[tuple[Any, ...]]:
    """Distinct (aTC, pTC, aTRP, pTRP) the operator wrote while ``cluster`` was pending."""
    out: list[tuple[Any, ...]] = []
    for status in statuses:
        if (status.get("pendingServiceStatus") or {}).get("rayClusterName") != cluster:
            continue
        snap = snapshot({"status": status})
        if not out or out[-1] != snap:
            out.append(snap)
    return out


async def test_incremental_upgrade_under_traffic() -> None:
    async with open_upgrade() as up:
        await up.client.create(RAYSERVICES, incremental_service(NAME, price=3), up.namespace)
        svc = await up.serving(NAME)
        old_cluster = svc["status"]["activeServiceStatus"]["rayClusterName"]
        url = await up.gateway_url(NAME)
        stop_monitor = asyncio.Event()
        monitor = asyncio.create_task(up.watch_replicas(NAME, stop_monitor))
        statuses: list[dict[str, Any]] = []
        recorder = asyncio.create_task(up.record(NAME, statuses))

        async with GatewayTraffic(url) as traffic:
            await until("traffic flowing", lambda: traffic.sent_at_least(20))
            await up.update_spec(NAME, lambda svc: new_version(svc, price=4, cpu="600m"))
            measured: dict[int, float] = {}
            new_cluster = None

            async def step_done() -> bool:
                nonlocal new_cluster
                current = await up.get(NAME)
                status = current.get("status") or {}
                pending = status.get("pendingServiceStatus") or {}
                new_cluster = pending.get("rayClusterName") or new_cluster
                weight = pending.get("trafficRoutedPercent")
                route = await route_programmed(up)
                if route is not None and weight is not None and weight not in measured:
                    weights = dict(backend_weights(route))
                    if new_cluster and weights.get(f"{new_cluster}-serve-svc") == weight:
                        # No step can happen during the batch, and the batch is the only traffic.
                        async with up.pump.hold(), traffic.paused():
                            measured[weight] = await up.share(url, BATCH, NEW)
                active = (status.get("activeServiceStatus") or {}).get("rayClusterName")
                upgrading = condition(current, "UpgradeInProgress").get("status")
                return bool(new_cluster and active == new_cluster and upgrading == "False")

            await until("upgrade promoted", step_done, timeout=120)
            route = await until("route on the new cluster only", lambda: _single_backend(up, new_cluster))
            async with traffic.paused():
                measured[100] = await up.share(url, BATCH, NEW)
            stop_monitor.set()
            await monitor
        recorder.cancel()
        assert new_cluster is not None

        # 0 failed requests through the whole upgrade, and both versions answered.
        assert traffic.failures == [], traffic.failures[:5]
        assert any(OLD in a for a in traffic.answers) and any(NEW in a for a in traffic.answers)
        # After each traffic step the measured share of the new cluster matches its weight (the
        # step to 100 is followed by promotion in the next pass: measured on the promoted route).
        assert set(measured) >= {25, 50, 75, 100}, measured
        for weight, share in measured.items():
            assert abs(share - weight / 100) <= TOLERANCE, (weight, share)
        # Combined replicas never above (100 + maxSurgePercent) % of the target.
        assert 0 < up.max_replicas <= REPLICAS * 150 // 100, up.max_replicas
        # Status fields at each step, as the reference's worked example (maxSurge 50, step 25).
        steps = [s for s in pending_steps(statuses, new_cluster) if None not in s]
        assert steps == [
            (100, 0, 100, 0),
            (100, 50, 100, 0),
            (100, 50, 75, 25),
            (100, 50, 50, 50),
            (50, 50, 50, 50),
            (50, 100, 50, 50),
            (50, 100, 25, 75),
            (50, 100, 0, 100),
        ], steps
        # Traffic steps at least intervalSeconds apart (pLTMT, FakeClock time).
        times = sorted(
            {
                t
                for st in statuses
                if (st.get("pendingServiceStatus") or {}).get("rayClusterName") == new_cluster
                and (
                    t := parse_rfc3339((st.get("pendingServiceStatus") or {}).get("lastTrafficMigratedTime"))
                )
            }
        )
        assert len(times) == 5, times  # weight 0 (backend added), 25, 50, 75, 100
        for t0, t1 in itertools.pairwise(times):
            assert (t1 - t0).total_seconds() >= 10, times
        # Promotion: the new cluster is active with all traffic; the old one is deleted.
        final = await up.get(NAME)
        assert snapshot(final)[0::2] == (100, 100)
        assert not (final["status"].get("pendingServiceStatus") or {}).get("rayClusterName")
        assert backend_weights(route) == [(f"{new_cluster}-serve-svc", 100)]
        # A's last capacity step (to 0) is in the same pass as promotion, so status never shows
        # it: the old cluster itself does, until its deletion delay ends.
        old_doc = await up.serve_doc(old_cluster)
        assert old_doc["target_capacity"] == 0, old_doc.get("target_capacity")
        assert old_doc["applications"]["fruit_app"]["deployments"]["Fruit"]["replicas"] == []

        async def old_gone() -> bool:
            try:
                await up.client.get(RAYCLUSTERS, old_cluster, up.namespace)
            except NotFound:
                return True
            return False

        await until("old cluster deleted", old_gone)


async def _single_backend(up: Upgrade, cluster: str | None) -> dict[str, Any] | None:
    route = await route_programmed(up)
    if route is None or backend_weights(route) != [(f"{cluster}-serve-svc", 100)]:
        return None
    return route
