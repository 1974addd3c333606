"""Cluster simulator: how many real probes per second it sustains, and what one costs.

N Pods (default 200) each serve ``GET /healthz`` on their own loopback address and carry KubeRay's
head-style exec readiness probe (two ``wget | grep success`` fetches). With periods scaled so each
Pod is probed ``rate`` times a second, the run measures, over a fixed window: probes completed per
second, process CPU seconds per probe, and the time from creating the Pods to all of them being
Ready with a ready endpoint. The baseline, in the same process and window length, is the same
pair of GETs issued directly with aiohttp (new connection each, as the kubelet does), so
``cpu_ratio_probe_vs_raw`` is the simulator's overhead per probe (interpretation, state machine,
bookkeeping) over the bare HTTP work. Pod servers run in this process too and count in both.

Prints one JSON line at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import resource
import time
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from kuberay_py.client import resources
from kuberay_py.envtest import Environment
from kuberay_py.envtest.sim import Simulator

PROBE = "wget -T 2 -q -O- http://localhost:8080/healthz | grep success"


class HealthRuntime:
    def __init__(self) -> None:
        self.runners: dict[str, web.AppRunner] = {}
        self.ips: list[str] = []

    async def start(self, pod: dict[str, Any], ip: str) -> None:
        async def ok(_: web.Request) -> web.Response:
            return web.Response(text="success")

        app = web.Application()
        app.router.add_get("/healthz", ok)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, ip, 8080).start()
        self.runners[pod["metadata"]["uid"]] = runner
        self.ips.append(ip)

    async def stop(self, pod: dict[str, Any], ip: str) -> None:
        runner = self.runners.pop(pod["metadata"]["uid"], None)
        if runner is not None:
            await runner.cleanup()


def pod(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"p{i}", "labels": {"app": "bench"}},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "bench",
                    "ports": [{"name": "http", "containerPort": 8080}],
                    "readinessProbe": {
                        "exec": {"command": ["bash", "-c", f"{PROBE} && {PROBE}"]},
                        "periodSeconds": 5,
                        "timeoutSeconds": 2,
                    },
                }
            ]
        },
    }


async def raw_baseline(ips: list[str], seconds: float, rate: float) -> tuple[float, float]:
    """(GET pairs per second, CPU seconds per pair) issuing the probes' HTTP work directly."""
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True, limit=0)) as s:

        async def one(ip: str) -> None:
            for _ in range(2):
                async with s.get(f"http://{ip}:8080/healthz") as r:
                    assert "success" in await r.text()

        done = 0
        cpu0, t0 = time.process_time(), time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            tick = time.perf_counter()
            await asyncio.gather(*(one(ip) for ip in ips))
            done += len(ips)
            await asyncio.sleep(max(0.0, 1 / rate - (time.perf_counter() - tick)))
        elapsed = time.perf_counter() - t0
        return done / elapsed, (time.process_time() - cpu0) / max(done, 1)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--rate", type=float, default=1.0, help="probes per Pod per second")
    parser.add_argument("--window", type=float, default=5.0)
    args = parser.parse_args()

    runtime = HealthRuntime()
    async with Environment() as env:
        sim_client = env.new_client()
        sim = Simulator(sim_client, pod_runtime=runtime, probe_period_scale=1 / (5 * args.rate))
        task = asyncio.create_task(sim.run())
        await sim.wait_ready()
        client = env.new_client()
        ns = await env.create_namespace()
        await client.create(
            resources.SERVICES,
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "bench"},
                "spec": {"selector": {"app": "bench"}, "ports": [{"port": 80, "targetPort": "http"}]},
            },
            ns,
        )
        t0 = time.perf_counter()
        for i in range(args.pods):
            await client.create(resources.PODS, pod(i), ns)
        while True:
            slices = await client.list(resources.ENDPOINTSLICES, ns)
            ready = sum(
                1 for s in slices["items"] for e in s.get("endpoints") or [] if e["conditions"]["ready"]
            )
            if ready == args.pods:
                break
            await asyncio.sleep(0.05)
        all_ready_s = time.perf_counter() - t0

        def rounds() -> int:
            return sum(sim.kubelet.probe_rounds(ns, f"p{i}", "readiness") for i in range(args.pods))

        r0, cpu0, w0 = rounds(), time.process_time(), time.perf_counter()
        await asyncio.sleep(args.window)
        r1, cpu1, w1 = rounds(), time.process_time(), time.perf_counter()
        probes_per_s = (r1 - r0) / (w1 - w0)
        cpu_per_probe = (cpu1 - cpu0) / max(r1 - r0, 1)

        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        # The stopped simulator stopped the Pods' servers: bring the same servers up again on the
        # same addresses so the baseline hits identical listeners with nothing else running.
        ips = list(dict.fromkeys(runtime.ips))
        for n, ip in enumerate(ips):
            await runtime.start({"metadata": {"uid": f"baseline-{n}"}}, ip)
        raw_per_s, raw_cpu = await raw_baseline(ips, args.window, args.rate)
        for runner in list(runtime.runners.values()):
            await runner.cleanup()
        await client.close()
        await sim_client.close()

    print(
        orjson.dumps(
            {
                "pods": args.pods,
                "target_probes_per_s": args.pods * args.rate,
                "probes_per_s": round(probes_per_s, 1),
                "cpu_ms_per_probe": round(cpu_per_probe * 1000, 3),
                "raw_get_pairs_per_s": round(raw_per_s, 1),
                "cpu_ms_per_raw_get_pair": round(raw_cpu * 1000, 3),
                "cpu_ratio_probe_vs_raw": round(cpu_per_probe / raw_cpu, 2) if raw_cpu else None,
                "all_ready_s": round(all_ready_s, 2),
                "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            }
        ).decode()
    )


if __name__ == "__main__":
    asyncio.run(main())
