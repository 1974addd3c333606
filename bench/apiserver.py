"""Built-in API server throughput: create 10k Pods, list them, fan a watch out to 10 watchers.

The server runs in its own process (``python -m kuberay_py.envtest``) so its peak RSS is measured
alone; the client is kuberay_py's own ``Client``. Prints one JSON line, e.g.::

    {"pods": 10000, "creates_per_s": ..., "list_10k_pods_s": ..., "peak_rss_mib": ...}

Target: ``list_10k_pods_s`` < 1.0. Run: ``.venv/bin/python bench/apiserver.py [--pods N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from kuberay_py.client import Client, load_config
from kuberay_py.client import resources as r


def pod(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{i:05d}", "labels": {"app": "bench", "group": f"g{i % 10}"}},
        "spec": {
            "containers": [
                {
                    "name": "ray-worker",
                    "image": "rayproject/ray:2.52.0",
                    "ports": [{"containerPort": 8080, "name": "metrics"}],
                    "resources": {
                        "limits": {"cpu": "1", "memory": "2Gi"},
                        "requests": {"cpu": "1", "memory": "2Gi"},
                    },
                    "env": [{"name": "RAY_CLUSTER_NAME", "value": "bench"}, {"name": "POD_IP", "value": "x"}],
                }
            ]
        },
    }


def rss_peak_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def start_server(kubeconfig: str) -> asyncio.subprocess.Process:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kuberay_py.envtest",
        "--kubeconfig-out",
        kubeconfig,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    for _ in range(300):
        if os.path.exists(kubeconfig):  # noqa: ASYNC240 - a stat per 50 ms poll
            return proc
        await asyncio.sleep(0.05)
    raise RuntimeError("server did not start")


async def run(n: int, watchers: int, events: int, concurrency: int) -> dict[str, Any]:
    tmp = tempfile.mkdtemp(prefix="bench-apiserver-")
    kubeconfig = os.path.join(tmp, "kubeconfig")
    proc = await start_server(kubeconfig)
    try:
        config = await load_config(kubeconfig, qps=1e9, burst=10**9)
        async with Client(config) as c:
            await c.create(
                r.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}
            )
            queue = list(range(n))

            async def creator() -> None:
                while queue:
                    await c.create(r.PODS, pod(queue.pop()), "bench")

            t0 = time.perf_counter()
            await asyncio.gather(*(creator() for _ in range(concurrency)))
            create_s = time.perf_counter() - t0

            list_times = []
            body: dict[str, Any] = {}
            for _ in range(3):
                t0 = time.perf_counter()
                body = await c.list(r.PODS, "bench")
                list_times.append(time.perf_counter() - t0)
            assert len(body["items"]) == n, len(body["items"])

            t0 = time.perf_counter()
            paged = await c.list_all(r.PODS, "bench", limit=500)
            paged_s = time.perf_counter() - t0
            assert len(paged["items"]) == n

            t0 = time.perf_counter()
            sel = await c.list(r.PODS, "bench", label_selector="group=g3")
            selector_s = time.perf_counter() - t0
            assert len(sel["items"]) == n // 10

            gets = list(range(min(n, 5_000)))
            n_gets = len(gets)

            async def getter() -> None:
                while gets:
                    await c.get(r.PODS, f"pod-{gets.pop():05d}", "bench")

            t0 = time.perf_counter()
            await asyncio.gather(*(getter() for _ in range(concurrency)))
            get_s = time.perf_counter() - t0

            rv = body["metadata"]["resourceVersion"]
            received = [0] * watchers
            done = asyncio.Event()

            async def watch(i: int) -> None:
                async for ev in c.watch(
                    r.PODS, "bench", resource_version=rv, timeout_seconds=120, allow_bookmarks=False
                ):
                    if ev["type"] == "MODIFIED":
                        received[i] += 1
                        if all(x >= events for x in received):
                            done.set()
                        if received[i] >= events:
                            return

            tasks = [asyncio.create_task(watch(i)) for i in range(watchers)]
            await asyncio.sleep(0.2)  # let the watches open
            t0 = time.perf_counter()
            patches = list(range(events))

            async def patcher() -> None:
                while patches:
                    i = patches.pop()
                    await c.patch(
                        r.PODS, f"pod-{i:05d}", {"metadata": {"labels": {"touched": "yes"}}}, "bench"
                    )

            await asyncio.gather(*(patcher() for _ in range(concurrency)))
            await asyncio.wait_for(done.wait(), 120)
            fanout_s = time.perf_counter() - t0
            await asyncio.gather(*tasks)
        peak = rss_peak_mib(proc.pid)
    finally:
        proc.send_signal(signal.SIGINT)
        await proc.wait()
    best = min(list_times)
    return {
        "pods": n,
        "creates_per_s": round(n / create_s, 1),
        "gets_per_s": round(n_gets / get_s, 1),
        "list_10k_pods_s": round(best, 4),
        "list_paged_500_s": round(paged_s, 4),
        "list_label_selector_s": round(selector_s, 4),
        "selector_vs_full_list_ratio": round(selector_s / best, 3),
        "watch_fanout_watchers": watchers,
        "watch_fanout_events": events,
        "watch_fanout_deliveries_per_s": round(watchers * events / fanout_s, 1),
        "watch_fanout_s": round(fanout_s, 3),
        "peak_rss_mib": round(peak, 1),
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--pods", type=int, default=10_000)
    p.add_argument("--watchers", type=int, default=10)
    p.add_argument("--events", type=int, default=1_000)
    p.add_argument("--concurrency", type=int, default=32)
    a = p.parse_args()
    print(orjson.dumps(asyncio.run(run(a.pods, a.watchers, a.events, a.concurrency))).decode())


if __name__ == "__main__":
    main()
