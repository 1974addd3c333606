"""Writes, steady-state requests, memory and retry rates of the whole operator, Pods never Ready.

The issue-12 workload: RayClusters x workers created at once on an API server with no kubelet,
so every Pod stays Pending (think unschedulable Pods, a quota, an image that never pulls). The
built-in API server runs in its own process (``python -m kuberay_py.envtest``, no simulator); every
measurement runs the real operator (``controllers.cli.operator.build_manager``: all controllers)
in a fresh child process of this script, so RSS is the operator's alone on a fresh heap.

Runs (each a child process):

* ``scale`` at 100 x 10 (1,100 Pods) and 1,000 x 10 (11,000 Pods): operator writes by kind
  (Pods, Services, RayCluster status, Events) per cluster against the minimum (1 head Service,
  1 + workers Pods, 1 status write; Events apart), then a steady window with the resync shortened
  so every cluster is reconciled several times in it: every request the operator sends there.
  RSS: after imports (the floor), peak (``VmHWM``) and steady (after the window).
* ``startup`` at 11,000 Pods: a new operator process on the converged namespace: peak RSS during
  the first sync (list + initial reconciles) against the steady RSS once synced, and its writes.
* ``forbidden``: 200 RayClusters in an in-process built-in server whose Pod creates all return 403
  (fault injection), real time: the total request rate after the burst with the default retry
  limiter, and with ``--reconcile-retry-qps 0`` (per-item back-off only, as KubeRay) for the ratio.
* ``memory`` (1,100 Pods, tracemalloc on): where the memory goes, top allocation sites.

The final JSON line has every figure. Run:
``.venv/bin/python bench/raycluster_efficiency.py [--small-only] [--steady 30]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RSS_AT_IMPORT: int | None = None  # set in child() before the operator's modules are imported


def proc_status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def mib(kib: int) -> float:
    return round(kib / 1024, 1)


def kind_of(method: str, path: str) -> str:
    if "/events" in path:
        return "events"
    if path.endswith("/status") and "/rayclusters/" in path:
        return "raycluster_status"
    for part in ("pods", "services", "rayclusters"):
        if f"/{part}" in path:
            return part
    return "other"


class Counting:
    """Counts what the operator's clients send: (method, kind), and the time of each."""

    def __init__(self, *clients: Any) -> None:
        self.calls: Counter[tuple[str, str]] = Counter()
        self.times: list[tuple[float, str, str]] = []
        for client in clients:
            self._wrap(client)

    def _wrap(self, client: Any) -> None:
        original = client.request

        async def request(method: str, path: str, **kw: Any) -> Any:
            key = (method.upper(), kind_of(method, path))
            self.calls[key] += 1
            self.times.append((time.perf_counter(), *key))
            return await original(method, path, **kw)

        client.request = request

    def writes(self) -> Counter[str]:
        return Counter({k: n for (m, k), n in self.calls.items() if m != "GET"})

    def total(self) -> int:
        return sum(self.calls.values())


class RssSampler:
    """Peak RSS by ``VmHWM`` (the kernel's high-water mark), and the RSS now."""

    def peak(self) -> int:
        return proc_status("VmHWM")

    def now(self) -> int:
        gc.collect()
        return proc_status("VmRSS")


async def build(kubeconfig: str, ns: str, resync: float, retry_qps: float = 10.0) -> tuple[Any, Counting]:
    from controllers.cli.flags import OperatorFlags
    from controllers.cli.operator import build_manager
    from kuberay_py.client import load_config

    flags = OperatorFlags(
        metrics_addr="0",
        health_probe_bind_address="0",
        enable_leader_election=False,
        watch_namespace=[ns],
        raycluster_resync_period=resync,
        reconcile_retry_qps=retry_qps,
    )
    manager = build_manager(await load_config(kubeconfig), flags)
    return manager, Counting(manager.client, manager.events_client)


async def wait_quiet(counter: Counting, quiet: float, limit: float) -> None:
    """Until the operator sent nothing for ``quiet`` seconds (bounded by ``limit``)."""
    deadline = time.perf_counter() + limit
    while time.perf_counter() < deadline:
        last = counter.times[-1][0] if counter.times else 0.0
        if time.perf_counter() - last >= quiet:
            return
        await asyncio.sleep(0.2)


async def run_scale(args: argparse.Namespace) -> dict[str, Any]:
    from raycluster_scale import cluster  # the same RayCluster as the scale bench (a sibling script)

    from controllers import constants as C
    from kuberay_py.client import Client, load_config
    from kuberay_py.client.resources import NAMESPACES, PODS

    assert RSS_AT_IMPORT is not None
    rss = RssSampler()
    driver = Client(await load_config(args.kubeconfig, qps=1000.0, burst=2000))
    ns = args.namespace
    await driver.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    manager, counter = await build(args.kubeconfig, ns, args.resync)
    task = asyncio.create_task(manager.run(install_signal_handlers=False))
    await asyncio.wait_for(manager.elected.wait(), 60)
    rss_empty = rss.now()
    cpu0, t0 = time.process_time(), time.perf_counter()
    sem = asyncio.Semaphore(20)

    async def make(i: int) -> None:
        async with sem:
            await driver.create(C.RAYCLUSTERS, cluster(f"rc-{i:04d}", ns, args.workers), ns)

    await asyncio.gather(*(make(i) for i in range(args.clusters)))
    pods_wanted = args.clusters * (args.workers + 1)
    informer = manager.cache.informer_for(PODS)
    while len(informer.store) < pods_wanted and time.perf_counter() - t0 < 1800:  # noqa: ASYNC110 - polls a cache size
        await asyncio.sleep(0.5)
    all_pods_s = time.perf_counter() - t0
    await wait_quiet(counter, 5.0, 300)
    converge_s = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    writes = counter.writes()
    statuses = [(o.get("status") or {}) for o in (await driver.list(C.RAYCLUSTERS, ns))["items"]]
    complete = sum(
        1 for s in statuses if (s.get("head") or {}).get("podName") and s.get("desiredWorkerReplicas")
    )
    rss_converged = rss.now()
    before = counter.total()
    mark = len(counter.times)
    await asyncio.sleep(args.steady)
    steady = counter.times[mark:]
    rss_steady = rss.now()
    peak = rss.peak()
    manager.stop()
    await asyncio.wait_for(task, 60)
    await driver.close()
    n = args.clusters
    minimum = {"pods": args.workers + 1, "services": 1, "raycluster_status": 1}
    kinds = ("pods", "services", "raycluster_status", "events")
    per_cluster = {k: round(writes.get(k, 0) / n, 2) for k in kinds}
    non_event = sum(writes.get(k, 0) for k in minimum)
    return {
        "pods": pods_wanted,
        "all_pods_created_s": round(all_pods_s, 1),
        "converged_s": round(converge_s, 1),
        "operator_cpu_s": round(cpu, 2),
        "writes_per_cluster": per_cluster,
        "minimum_writes_per_cluster": minimum,
        "writes_ratio_vs_minimum": round(non_event / (n * sum(minimum.values())), 3),
        "writes_per_pod_incl_events": round(sum(writes.values()) / pods_wanted, 3),
        "statuses_complete": complete,
        "steady_window_s": args.steady,
        "resync_period_s": args.resync,
        "steady_state_requests": len(steady),
        "steady_state_requests_by_kind": dict(Counter(f"{m} {k}" for _, m, k in steady)),
        "requests_before_steady": before,
        "rss_mib_at_import": mib(RSS_AT_IMPORT),
        "rss_mib_empty_cache": mib(rss_empty),
        "rss_mib_converged": mib(rss_converged),
        "rss_mib_steady": mib(rss_steady),
        "rss_mib_peak": mib(peak),
        "rss_kib_per_pod": round((rss_steady - rss_empty) / pods_wanted, 2),
    }


async def run_startup(args: argparse.Namespace) -> dict[str, Any]:
    """A new operator on ``args.namespace``, already converged: first-sync peak vs steady RSS."""
    from kuberay_py.client.resources import PODS

    assert RSS_AT_IMPORT is not None
    rss = RssSampler()
    manager, counter = await build(args.kubeconfig, args.namespace, args.resync)
    t0 = time.perf_counter()
    task = asyncio.create_task(manager.run(install_signal_handlers=False))
    await asyncio.wait_for(manager.elected.wait(), 120)
    synced_s = time.perf_counter() - t0
    await wait_quiet(counter, 5.0, 300)
    settled_s = time.perf_counter() - t0
    pods = len(manager.cache.informer_for(PODS).store)
    await asyncio.sleep(args.steady)
    steady = rss.now()
    peak = rss.peak()
    writes = counter.writes()
    manager.stop()
    await asyncio.wait_for(task, 60)
    return {
        "pods": pods,
        "synced_s": round(synced_s, 1),
        "settled_s": round(settled_s, 1),
        "startup_writes": dict(writes),
        "rss_mib_at_import": mib(RSS_AT_IMPORT),
        "rss_mib_startup_peak": mib(peak),
        "rss_mib_steady": mib(steady),
        "startup_peak_vs_steady": round(peak / steady, 3),
    }


async def run_forbidden(args: argparse.Namespace) -> dict[str, Any]:
    """200 RayClusters, every Pod create 403, real time; request rate after the burst."""
    from raycluster_scale import cluster

    from controllers import constants as C
    from kuberay_py.envtest import Environment

    kubeconfig = os.path.join(tempfile.mkdtemp(prefix="forbidden-"), "kubeconfig")
    async with Environment([str(ROOT / "config" / "crd" / "bases")], kubeconfig_out=kubeconfig) as env:
        assert env.server is not None
        ns = await env.create_namespace(generate_name="forbidden-")
        env.server.inject(
            "POST",
            rf"^/api/v1/namespaces/{ns}/pods$",
            403,
            count=-1,
            message=f"pods is forbidden: unable to create new content in namespace {ns}",
        )
        driver = env.new_client()
        manager, counter = await build(kubeconfig, ns, 300.0, args.retry_qps)
        for i in range(args.clusters):
            await driver.create(C.RAYCLUSTERS, cluster(f"denied-{i:03d}", ns, 1), ns)
        t0 = time.perf_counter()
        task = asyncio.create_task(manager.run(install_signal_handlers=False))
        await asyncio.sleep(args.window)
        t_stop = time.perf_counter()  # what follows is the shutdown's flush of the final counts
        manager.stop()
        await asyncio.wait_for(task, 60)
        await driver.close()
    after = [(t - t0, m, k) for t, m, k in counter.times if t - t0 > args.burst and t <= t_stop]
    span = args.window - args.burst
    events = [e for e in after if e[2] == "events"]
    return {
        "clusters": args.clusters,
        "retry_qps": args.retry_qps,
        "window_s": args.window,
        "burst_s": args.burst,
        "requests_after_burst_per_s": round(len(after) / span, 2),
        "requests_after_burst_by_kind": dict(Counter(f"{m} {k}" for _, m, k in after)),
        "event_writes_after_burst_per_object_per_min": round(len(events) / args.clusters / (span / 60), 3),
        "requests_total": counter.total(),
    }


async def run_memory(args: argparse.Namespace) -> dict[str, Any]:
    """Where the memory of a synced operator goes (tracemalloc), on an existing namespace."""
    from kuberay_py.client.resources import PODS

    tracemalloc.start(1)
    before = tracemalloc.take_snapshot()
    manager, counter = await build(args.kubeconfig, args.namespace, args.resync)
    task = asyncio.create_task(manager.run(install_signal_handlers=False))
    await asyncio.wait_for(manager.elected.wait(), 120)
    await wait_quiet(counter, 5.0, 300)
    gc.collect()
    pods = len(manager.cache.informer_for(PODS).store)
    after = tracemalloc.take_snapshot()
    stats = after.compare_to(before, "lineno")

    def where(stat: tracemalloc.StatisticDiff) -> str:
        frame = stat.traceback[0]
        name = frame.filename.split("site-packages/")[-1].replace(str(ROOT) + "/", "")
        return f"{name}:{frame.lineno}"

    top = [{"where": where(s), "kib": round(s.size_diff / 1024, 1)} for s in stats[:12]]
    total = sum(s.size_diff for s in stats)
    manager.stop()
    await asyncio.wait_for(task, 60)
    return {
        "pods": pods,
        "traced_mib_after_sync": round(total / 2**20, 1),
        "traced_kib_per_pod": round(total / 1024 / max(pods, 1), 2),
        "top": top,
    }


def child(argv: list[str]) -> None:
    global RSS_AT_IMPORT
    p = argparse.ArgumentParser()
    p.add_argument("--child", required=True, choices=["scale", "startup", "forbidden", "memory"])
    p.add_argument("--kubeconfig", default="")
    p.add_argument("--namespace", default="")
    p.add_argument("--clusters", type=int, default=100)
    p.add_argument("--workers", type=int, default=10)
    p.add_argument("--steady", type=float, default=30.0)
    p.add_argument("--resync", type=float, default=10.0)
    p.add_argument("--retry-qps", type=float, default=10.0)
    p.add_argument("--window", type=float, default=60.0)
    p.add_argument("--burst", type=float, default=20.0)
    args = p.parse_args(argv)
    import controllers.cli.operator  # noqa: F401 - the operator's import floor, measured alone

    RSS_AT_IMPORT = proc_status("VmRSS")
    from kuberay_py.log import configure

    configure(level="error", stream=sys.stderr)  # as the operator logs; the parent discards it
    run = {"scale": run_scale, "startup": run_startup, "forbidden": run_forbidden, "memory": run_memory}
    result = asyncio.run(run[args.child](args))
    print("RESULT " + orjson.dumps(result).decode(), flush=True)


def spawn(*argv: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        check=False,
    )
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            result: dict[str, Any] = orjson.loads(line[7:])
            print(orjson.dumps({"run": argv[1], **result}).decode(), flush=True)
            return result
    raise SystemExit(f"child {argv} failed (exit {out.returncode}):\n{out.stdout[-3000:]}")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=10)
    p.add_argument("--steady", type=float, default=30.0, help="steady window in seconds")
    p.add_argument("--small-only", action="store_true", help="skip the 11,000-Pod runs")
    p.add_argument("--large-clusters", type=int, default=1000)
    args = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="rc-eff-")
    kubeconfig = os.path.join(tmp, "kubeconfig")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kuberay_py.envtest",
            "--kubeconfig-out",
            kubeconfig,
            "--crd",
            str(ROOT / "config" / "crd" / "bases"),
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    result: dict[str, Any] = {}
    try:
        for _ in range(600):
            if os.path.exists(kubeconfig) and os.path.getsize(kubeconfig) > 0:
                break
            time.sleep(0.1)
        time.sleep(1.0)
        common = ["--kubeconfig", kubeconfig, "--workers", str(args.workers), "--steady", str(args.steady)]
        small = spawn("--child", "scale", "--namespace", "small", "--clusters", "100", *common)
        memory = spawn("--child", "memory", "--namespace", "small", *common)
        forbidden = spawn("--child", "forbidden", "--clusters", "200")
        per_item = spawn("--child", "forbidden", "--clusters", "200", "--retry-qps", "0")
        result = {
            "workers_per_cluster": args.workers,
            "c100_writes_per_cluster": small["writes_per_cluster"],
            "c100_minimum_writes_per_cluster": small["minimum_writes_per_cluster"],
            "c100_writes_ratio_vs_minimum": small["writes_ratio_vs_minimum"],
            "c100_writes_per_pod_incl_events": small["writes_per_pod_incl_events"],
            "c100_all_pods_created_s": small["all_pods_created_s"],
            "c100_operator_cpu_s": small["operator_cpu_s"],
            "steady_window_s": args.steady,
            "c100_steady_state_requests": small["steady_state_requests"],
            "rss_mib_at_import": small["rss_mib_at_import"],
            "pods1100_rss_mib_peak": small["rss_mib_peak"],
            "pods1100_rss_mib_steady": small["rss_mib_steady"],
            "pods1100_rss_kib_per_pod": small["rss_kib_per_pod"],
            "traced_kib_per_pod": memory["traced_kib_per_pod"],
            "retry_requests_per_s_403_default": forbidden["requests_after_burst_per_s"],
            "retry_requests_per_s_403_per_item_only": per_item["requests_after_burst_per_s"],
            "event_writes_per_object_per_min_403": forbidden["event_writes_after_burst_per_object_per_min"],
        }
        if not args.small_only:
            large = spawn(
                "--child", "scale", "--namespace", "large", "--clusters", str(args.large_clusters), *common
            )
            startup = spawn("--child", "startup", "--namespace", "large", *common)
            result.update(
                {
                    "c1000_writes_per_cluster": large["writes_per_cluster"],
                    "c1000_writes_ratio_vs_minimum": large["writes_ratio_vs_minimum"],
                    "c1000_steady_state_requests": large["steady_state_requests"],
                    "c1000_all_pods_created_s": large["all_pods_created_s"],
                    "pods11000_rss_mib_peak": large["rss_mib_peak"],
                    "pods11000_rss_mib_steady": large["rss_mib_steady"],
                    "pods11000_rss_kib_per_pod": large["rss_kib_per_pod"],
                    "startup_pods": startup["pods"],
                    "startup_rss_mib_peak": startup["rss_mib_startup_peak"],
                    "startup_rss_mib_steady": startup["rss_mib_steady"],
                    "startup_peak_vs_steady": startup["startup_peak_vs_steady"],
                    "startup_writes": startup["startup_writes"],
                }
            )
    finally:
        server.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(20)
        if server.poll() is None:
            server.kill()
    print(orjson.dumps(result).decode())


if __name__ == "__main__":
    if "--child" in sys.argv:
        child(sys.argv[1:])
    else:
        main()
