"""RayCluster controller at scale: 100 RayClusters x 10 workers to `ready`, concurrency 1 vs 10.

Layout: the built-in API server and the cluster simulator (kubelet, GC, EndpointSlices) run in a
*subprocess* (``python -m kuberay_py.envtest --simulate``), so this process's CPU time and RSS are
the operator's (plus a small driver that creates the clusters and polls their state once a second).

Probe injection is off (``ENABLE_PROBES_INJECTION=false``): the simulator runs no fake Ray here, so
Pods turn Ready as soon as they run; what is measured is the operator, not Ray start-up.

Reported (final JSON line):
* ``wall_s_c1`` / ``wall_s_c10``: create-to-all-ready with 1 and 10 concurrent reconciles. This
  includes the simulator's own work (binding and Pod status writes through its 100 QPS client),
  so ``all_pods_created_s_*`` (until the operator's last Pod create) is reported as well;
* ``writes_per_cluster`` and ``writes_ratio_vs_minimum``: operator writes (POST/PUT/PATCH/DELETE;
  Kubernetes Events counted apart as ``event_writes``) per cluster over the minimum that reaches
  `ready` with an accurate status: 1 head Service + 11 Pods + 2 status writes (the first one
  acknowledging the new cluster, the final `ready`);
* ``steady_state_writes`` / ``steady_state_requests``: everything the operator sent during a
  steady window after all clusters were ready, with the resync period shortened so every cluster
  is reconciled several times inside the window (a fast-forward of the 300 s default);
* ``operator_cpu_s_c1`` / ``_c10`` and ``rss_kib_per_cached_pod`` (RSS growth from an empty cache
  to all Pods cached, divided by the cached Pods; measured in the first run, on a fresh heap).
  The operator's Pod cache transform (``cache_transforms()``) is on, as in ``build_manager``;
  ``--full-pods`` turns it off to measure what whole cached Pods cost.

Run: ``.venv/bin/python bench/raycluster_scale.py [--clusters 100 --workers 10 --steady 30]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controllers import constants as C  # noqa: E402
from controllers.raycluster.options import RayClusterOptions  # noqa: E402
from controllers.raycluster.setup import cache_selectors, cache_transforms, setup  # noqa: E402
from kuberay_py.client import Client, load_config  # noqa: E402
from kuberay_py.client.resources import NAMESPACES, PODS  # noqa: E402
from kuberay_py.log import configure  # noqa: E402
from kuberay_py.manager import Manager, ManagerOptions  # noqa: E402

WRITE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cluster(name: str, ns: str, workers: int) -> dict[str, Any]:
    container = {
        "image": "rayproject/ray:2.52.0",
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
    }
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {"containers": [{"name": "ray-head", **container}]}},
            },
            "workerGroupSpecs": [
                {
                    "groupName": "workers",
                    "replicas": workers,
                    "minReplicas": 0,
                    "maxReplicas": workers,
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [{"name": "ray-worker", **container}]}},
                }
            ],
        },
    }


class Counting:
    """Wraps the operator clients' ``request`` to count what they send, by method and outcome.

    The manager has two clients: ``client`` for the controllers' reads and writes and
    ``events_client`` for the event recorder (as controller-runtime's recorder has its own
    clientset). Both are wrapped, or Kubernetes Events would never be counted.
    """

    def __init__(self, *clients: Client) -> None:
        self.calls: Counter[tuple[str, bool]] = Counter()  # (method, or EVENT for event writes; ok)
        self.last_pod_create = 0.0
        for client in clients:
            self._wrap(client)

    def _wrap(self, client: Client) -> None:
        original = client.request

        async def request(method: str, path: str, **kw: Any) -> Any:
            kind = "EVENT" if "/events" in path else method.upper()
            try:
                result = await original(method, path, **kw)
            except Exception:
                self.calls[(kind, False)] += 1
                raise
            self.calls[(kind, True)] += 1
            if kind == "POST" and path.endswith("/pods"):
                self.last_pod_create = time.perf_counter()
            return result

        client.request = request  # type: ignore[method-assign]

    def writes(self) -> int:
        return sum(n for (m, _), n in self.calls.items() if m in WRITE_METHODS)

    def failed_writes(self) -> int:
        return sum(n for (m, ok), n in self.calls.items() if m in WRITE_METHODS and not ok)

    def total(self) -> int:
        return sum(self.calls.values())

    def snapshot(self) -> Counter[tuple[str, bool]]:
        return Counter(self.calls)


def count_ready(items: list[dict[str, Any]]) -> int:
    # A function of its own so the driver's last list of RayClusters (~10 KiB each) is garbage
    # before RSS is measured: it is the driver's memory, not the operator's.
    return sum(1 for o in items if (o.get("status") or {}).get("state") == "ready")


async def run_once(
    kubeconfig: str,
    concurrency: int,
    clusters: int,
    workers: int,
    steady: float,
    resync: float,
    full_pods: bool = False,
) -> dict[str, Any]:
    config = await load_config(kubeconfig)
    driver = Client(await load_config(kubeconfig, qps=1000.0, burst=2000))
    ns = f"bench-c{concurrency}"
    await driver.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    manager = Manager(
        config,
        ManagerOptions(
            metrics_bind_address="0",
            health_probe_bind_address="0",
            namespaces=[ns],
            cache_selectors=cache_selectors(),
            cache_transforms=None if full_pods else cache_transforms(),
            graceful_shutdown_timeout=10.0,
        ),
    )
    options = dataclasses.replace(
        RayClusterOptions.from_env({}), enable_probes_injection=False, resync_period=resync
    )
    setup(manager, max_concurrent_reconciles=concurrency, options=options)
    counter = Counting(manager.client, manager.events_client)
    task = asyncio.create_task(manager.run(install_signal_handlers=False))
    await asyncio.sleep(1.0)  # caches synced (empty namespace)
    rss_base = rss_kib()
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    sem = asyncio.Semaphore(20)

    async def make(i: int) -> None:
        async with sem:
            await driver.create(C.RAYCLUSTERS, cluster(f"rc-{i:03d}", ns, workers), ns)

    await asyncio.gather(*(make(i) for i in range(clusters)))
    ready = 0
    deadline = t0 + 900
    while time.perf_counter() < deadline:
        ready = count_ready((await driver.list(C.RAYCLUSTERS, ns))["items"])
        if ready == clusters:
            break
        await asyncio.sleep(0.5)
    wall = time.perf_counter() - t0
    created_s = counter.last_pod_create - t0
    cpu = time.process_time() - cpu0
    writes_to_ready = counter.writes()
    failed = counter.failed_writes()
    by_method = {f"{m}{'' if ok else ' (failed)'}": n for (m, ok), n in sorted(counter.calls.items())}
    await asyncio.sleep(2.0)  # let trailing status writes land before the steady window
    cached_pods = len(manager.cache.list(PODS, ns))
    rss_ready = rss_kib()
    writes_settle = counter.writes()
    before = counter.snapshot()
    await asyncio.sleep(steady)
    after = counter.snapshot()
    window = after - before
    steady_writes = sum(n for (m, _), n in window.items() if m in WRITE_METHODS)
    steady_requests = sum(window.values())
    manager.stop()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(task, 30)
    await driver.close()
    minimum = clusters * (1 + 1 + workers + 3)
    strict_minimum = clusters * (1 + 1 + workers + 2)
    return {
        "concurrency": concurrency,
        "ready": ready,
        "wall_s": round(wall, 2),
        "all_pods_created_s": round(created_s, 2),
        "operator_cpu_s": round(cpu, 2),
        "writes_to_ready": writes_to_ready,
        "writes_after_settle": writes_settle,
        "failed_writes": failed,
        "event_writes": sum(n for (m, _), n in counter.calls.items() if m == "EVENT"),
        "requests_by_method": by_method,
        "minimum_writes": minimum,
        "status_writes_per_cluster": round(
            sum(n for (m, ok), n in counter.calls.items() if m == "PUT" and ok) / clusters, 2
        ),
        "writes_ratio_vs_minimum": round(writes_settle / minimum, 3),
        "writes_ratio_vs_strict_minimum": round(writes_settle / strict_minimum, 3),
        "steady_window_s": steady,
        "steady_state_writes": steady_writes,
        "steady_state_requests": steady_requests,
        "cached_pods": cached_pods,
        "rss_base_kib": rss_base,
        "rss_ready_kib": rss_ready,
        "rss_kib_per_cached_pod": round((rss_ready - rss_base) / max(1, cached_pods), 2),
    }


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--clusters", type=int, default=100)
    p.add_argument("--workers", type=int, default=10)
    p.add_argument("--steady", type=float, default=30.0, help="steady-state window in seconds")
    p.add_argument("--resync", type=float, default=10.0, help="resync period during the bench (default 300)")
    p.add_argument(
        "--full-pods",
        action="store_true",
        help="cache whole Pods (no cache_transforms(); only managedFields stripped), for comparison",
    )
    args = p.parse_args()
    configure(level="warning")
    tmp = tempfile.mkdtemp(prefix="rc-bench-")
    kubeconfig = os.path.join(tmp, "kubeconfig")
    server = subprocess.Popen(  # noqa: ASYNC220 - started once, before any timing
        [
            sys.executable,
            "-m",
            "kuberay_py.envtest",
            "--kubeconfig-out",
            kubeconfig,
            "--simulate",
            "--crd",
            str(ROOT / "config" / "crd" / "bases"),
        ],
        cwd=ROOT,
        # Pod IPs from a 127.N.0.0/16 loopback block: a routed pod network gives the simulator one
        # /24 (254 addresses), too few for 2 x 1,100 Pods; the operator never dials a Pod here.
        env={**os.environ, "KUBERAY_SIM_ROUTE_COMMAND": "false"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(600):
            if os.path.exists(kubeconfig) and os.path.getsize(kubeconfig) > 0:  # noqa: ASYNC240
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)
        runs = []
        for concurrency in (1, 10):
            runs.append(
                await run_once(
                    kubeconfig,
                    concurrency,
                    args.clusters,
                    args.workers,
                    args.steady,
                    args.resync,
                    args.full_pods,
                )
            )
            print(orjson.dumps(runs[-1]).decode(), flush=True)
    finally:
        server.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(20)
        if server.poll() is None:
            server.kill()
    c1, c10 = runs
    result = {
        "clusters": args.clusters,
        "workers_per_cluster": args.workers,
        "wall_s_c1": c1["wall_s"],
        "wall_s_c10": c10["wall_s"],
        "speedup_c10_vs_c1": round(c1["wall_s"] / c10["wall_s"], 2) if c10["wall_s"] else None,
        "all_pods_created_s_c1": c1["all_pods_created_s"],
        "all_pods_created_s_c10": c10["all_pods_created_s"],
        "status_writes_per_cluster_c1": c1["status_writes_per_cluster"],
        "status_writes_per_cluster_c10": c10["status_writes_per_cluster"],
        "operator_cpu_s_c1": c1["operator_cpu_s"],
        "operator_cpu_s_c10": c10["operator_cpu_s"],
        "writes_per_cluster": round(c10["writes_after_settle"] / args.clusters, 2),
        "minimum_writes_per_cluster": 1 + 1 + args.workers + 3,
        "writes_ratio_vs_minimum": max(c1["writes_ratio_vs_minimum"], c10["writes_ratio_vs_minimum"]),
        "writes_ratio_vs_strict_minimum": max(
            c1["writes_ratio_vs_strict_minimum"], c10["writes_ratio_vs_strict_minimum"]
        ),
        "failed_writes": c1["failed_writes"] + c10["failed_writes"],
        "steady_window_s": args.steady,
        "resync_period_s": args.resync,
        "steady_state_writes": c1["steady_state_writes"] + c10["steady_state_writes"],
        "steady_state_requests": c1["steady_state_requests"] + c10["steady_state_requests"],
        "rss_kib_per_cached_pod": c1["rss_kib_per_cached_pod"],
        "pod_cache_transform": not args.full_pods,
        "all_ready": c1["ready"] == args.clusters and c10["ready"] == args.clusters,
    }
    print(orjson.dumps(result).decode())


if __name__ == "__main__":
    asyncio.run(main())
