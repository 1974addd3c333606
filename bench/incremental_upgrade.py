"""Operator cost of one incremental upgrade, per step, against the minimum.

The scenario of ``tests/scenario/test_incremental_upgrade.py`` (4 Serve replicas, stepSizePercent
25, intervalSeconds 10 on a FakeClock, maxSurgePercent 50) on the built-in API server, the
simulator's Gateway and fake Ray, with continuous traffic through the Gateway. A *step* is one
change of (aTC, pTC, aTRP, pTRP) the operator wrote to status, plus the promotion. The minimum
per step is one write that moves it: an HTTPRoute update for a traffic step, a Serve PUT for a
capacity step; the ratio compares the operator's Gateway-API + Serve writes with that minimum.

Counts come from the operator's own API client (every request it sends, by verb and resource) and
its dashboard client (PUTs); CPU is the process's (operator, API server, simulator and fake Ray
share it), reported for the upgrade and for an equally long steady window before it, measured in
the same run. Prints one JSON line.

    .venv/bin/python bench/incremental_upgrade.py
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import itertools

from controllers.constants import RAYSERVICES
from controllers.ray.dashboard import DashboardClient
from tests.polling import condition
from tests.scenario.incremental_harness import (
    GatewayTraffic,
    Upgrade,
    incremental_service,
    new_version,
    open_upgrade,
    snapshot,
)

NAME = "bench"


def count_requests(up: Upgrade) -> Counter[str]:
    """Every API request of the operator's client, as "VERB resource"."""
    counts: Counter[str] = Counter()
    client = up.operator.manager.client
    original = client.request

    async def counted(method: str, path: str, **kw: Any) -> Any:
        parts = [p for p in path.split("?")[0].split("/") if p]
        rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
        if rest[:1] == ["namespaces"] and len(rest) > 2:
            rest = rest[2:]
        resource = rest[0] + (f"/{rest[2]}" if len(rest) > 2 else "") if rest else path
        counts[f"{method.upper()} {resource}"] += 1
        return await original(method, path, **kw)

    client.request = counted  # type: ignore[method-assign]
    return counts


def count_puts() -> Counter[str]:
    puts: Counter[str] = Counter()
    original = DashboardClient.put_serve_applications

    async def counted(self: DashboardClient, config: Any) -> None:
        puts[f"target_capacity={config.get('target_capacity')}"] += 1
        await original(self, config)

    DashboardClient.put_serve_applications = counted  # type: ignore[method-assign]
    return puts


async def wait(pred: Any, limit: float = 120.0) -> Any:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        result = await pred()
        if result:
            return result
        await asyncio.sleep(0.05)
    raise TimeoutError(str(pred))


async def run() -> dict[str, Any]:
    puts = count_puts()
    async with open_upgrade() as up:
        requests = count_requests(up)
        await up.client.create(RAYSERVICES, incremental_service(NAME, price=3), up.namespace)

        async def serving() -> bool:
            svc = await up.get(NAME)
            active = (svc.get("status") or {}).get("activeServiceStatus") or {}
            return (
                condition(svc, "Ready").get("status") == "True" and active.get("trafficRoutedPercent") == 100
            )

        await wait(serving)
        url = await up.gateway_url(NAME)
        statuses: list[dict[str, Any]] = []
        recorder = asyncio.create_task(up.record(NAME, statuses))
        async with GatewayTraffic(url) as traffic:
            # Steady window, as long (in fake time) as the upgrade will take.
            requests.clear()
            fake0, cpu0, wall0 = up.clock.now(), time.process_time(), time.monotonic()
            while up.clock.now() - fake0 < 60:  # noqa: ASYNC110 - waits on the pumped FakeClock
                await asyncio.sleep(0.05)
            steady = {"requests": sum(requests.values()), "cpu_s": time.process_time() - cpu0,
                      "wall_s": time.monotonic() - wall0, "fake_s": up.clock.now() - fake0}  # fmt: skip

            requests.clear()
            puts.clear()
            old = (await up.get(NAME))["status"]["activeServiceStatus"]["rayClusterName"]
            fake0, cpu0, wall0 = up.clock.now(), time.process_time(), time.monotonic()
            await up.update_spec(NAME, lambda svc: new_version(svc, price=4, cpu="600m"))

            async def promoted() -> bool:
                svc = await up.get(NAME)
                active = (svc.get("status") or {}).get("activeServiceStatus") or {}
                route = await up.route(NAME)
                backends = ((route or {}).get("spec") or {}).get("rules", [{}])[0].get("backendRefs", [])
                return active.get("rayClusterName") not in (None, old) and len(backends) == 1

            await wait(promoted)
            upgrade = {"cpu_s": time.process_time() - cpu0, "wall_s": time.monotonic() - wall0,
                       "fake_s": up.clock.now() - fake0}  # fmt: skip
        recorder.cancel()
        snaps: list[tuple[Any, ...]] = []
        for st in statuses:
            snap = snapshot({"status": st})
            if None not in snap and (not snaps or snaps[-1] != snap):
                snaps.append(snap)
        traffic_steps = sum(1 for x, y in itertools.pairwise(snaps) if x[2:] != y[2:])
        # A's last step to 0 happens in the promotion pass, so status never shows it (+1).
        capacity_steps = sum(1 for x, y in itertools.pairwise(snaps) if x[:2] != y[:2]) + 1
        steps = traffic_steps + capacity_steps
        # Minimum writes: one per step, plus adding B's backend and the promotion rewrite of the
        # route, plus B's first Serve config.
        minimum = steps + 3
        route_updates = requests["PUT httproutes"] + requests["POST httproutes"]
        serve_puts = sum(v for k, v in puts.items() if k.startswith("target_capacity="))
        writes = route_updates + serve_puts
        return {
            "bench": "incremental_upgrade",
            "steps": steps,
            "traffic_steps": traffic_steps,
            "capacity_steps": capacity_steps,
            "minimum_gateway_and_serve_writes": minimum,
            "operator_requests": dict(sorted(requests.items())),
            "operator_requests_total": sum(requests.values()),
            "requests_per_step": round(sum(requests.values()) / steps, 2),
            "httproute_writes": route_updates,
            "serve_puts": dict(sorted(puts.items())),
            "gateway_and_serve_writes": writes,
            "writes_vs_minimum": round(writes / minimum, 2),
            "status_writes": requests["PUT rayservices/status"],
            "upgrade": upgrade,
            "steady_same_fake_time": steady,
            "cpu_ratio_upgrade_vs_steady": round(upgrade["cpu_s"] / max(steady["cpu_s"], 1e-9), 2),
            "traffic_failures": len(traffic.failures),
            "traffic_sent": traffic.sent,
        }


def main() -> None:
    result = asyncio.run(run())
    print(json.dumps(result))


if __name__ == "__main__":
    main()
