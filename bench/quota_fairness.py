"""KubeRay's 100m CPU limit and the noisy neighbour, against the real kube-apiserver (issue 30).

Three cases, each with a fresh ``kuberay-operator`` process (the Helm chart's rendered args, so
``--reconcile-concurrency=1``, ``--qps=100``, ``--burst=200``) watching a fresh namespace of one
real etcd + kube-apiserver (``KUBEBUILDER_ASSETS``; no kubelet, so Pods stay Pending, as in the
issue's side-by-side run with KubeRay v1.7.0):

* ``converge``: N RayClusters x W workers (the sample) created at once; ``wall_s`` from the first
  create until all N x (W + 1) Pods exist (the bench's own Pod watch), the operator's CPU seconds
  and API writes (``rest_client_requests_total`` for every method but GET, from its ``/metrics``)
  over that time, peak RSS (``VmHWM``), then the CPU seconds of ``--idle`` quiet seconds after.
* ``create-after-big``: a RayCluster with ``--big`` workers is created and, 0.3 s later, one with
  ``--small`` workers; ``small_s`` is the small cluster's create until all its Pods exist.
* ``scale-after-big``: both clusters exist with 0 workers (heads only); the big one is patched to
  ``--big`` workers and, 0.3 s later, the small one to ``--small``; ``small_s`` as above.

Each case runs unthrottled and under the quota (cgroup v2 ``cpu.max`` or v1
``cpu.cfs_quota_us = 10000`` per ``cpu.cfs_period_us = 100000``, as ``bench/cpu_quota.py`` sets it;
``--no-quota`` / ``--quota-only`` pick one). ``--baseline PATH`` also runs every case with the
operator imported from another checkout (e.g. ``/work/main``), for same-run ratios
``new / baseline``. ``--profile DIR`` runs the operator under :mod:`cProfile` timed by
``time.thread_time`` (CPU time, so the waits of a contended or throttled process are not counted;
a sampling profiler's wall-clock samples put them on whatever call was preempted, typically the
socket ``send`` that woke the API server), enabled only over each case's measured part, one
``.pstats`` file per run: profile unthrottled, the profiler's own cost would eat the quota. The
last line is JSON.

    KUBEBUILDER_ASSETS=/tmp/kuberay-envtest-assets-1.36.2 .venv/bin/python bench/quota_fairness.py
    ... bench/quota_fairness.py --clusters 20 --cases converge --quota-only     # quicker
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import copy
import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.cpu_quota import Operator, Throttle, interrupt  # noqa: E402
from controllers.constants import RAYCLUSTERS  # noqa: E402
from kuberay_py.client import Client, load_config  # noqa: E402
from kuberay_py.client.resources import EVENTS, NAMESPACES, PODS  # noqa: E402

SAMPLE = ROOT / "config" / "samples" / "ray-cluster.sample.yaml"
CRDS = ROOT / "config" / "crd" / "bases"
CASES = ("converge", "create-after-big", "scale-after-big")
NEIGHBOUR_DELAY = 0.3
READS = {"GET", "LIST", "WATCH"}


@contextlib.contextmanager
def control_plane(tmp: Path) -> Iterator[Path]:
    """Real etcd + kube-apiserver with the CRDs, via ``python -m kuberay_py.envtest``."""
    if not os.environ.get("KUBEBUILDER_ASSETS"):
        raise SystemExit("set KUBEBUILDER_ASSETS to the etcd + kube-apiserver binaries (the real API server)")
    kubeconfig = tmp / "kubeconfig"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kuberay_py.envtest", "--kubeconfig-out", str(kubeconfig), "--crd", str(CRDS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("kubeconfig written"):
            break
    else:
        raise SystemExit(f"the control plane did not start (exit {proc.wait()})")
    try:
        yield kubeconfig
    finally:
        interrupt(proc)


def cluster(name: str, workers: int) -> dict[str, Any]:
    body = yaml.safe_load(SAMPLE.read_text())
    body["metadata"] = {"name": name}
    group = body["spec"]["workerGroupSpecs"][0]
    group.update(replicas=workers, minReplicas=0, maxReplicas=max(workers, 1000))
    return body


class Failed(Exception):
    """A run that did not finish (the operator exited, or too few Pods in time); others go on."""


class PodWatch:
    """The time each Pod of the namespace was first seen, by ``ray.io/cluster``."""

    def __init__(self, client: Client, ns: str) -> None:
        self.client, self.ns = client, ns
        self.seen: dict[str, dict[str, float]] = {}
        self.changed = asyncio.Event()

    async def run(self) -> None:
        rv = (await self.client.list(PODS, self.ns))["metadata"].get("resourceVersion")
        while True:
            async for event in self.client.watch(PODS, self.ns, resource_version=rv, timeout_seconds=600):
                meta = event["object"].get("metadata") or {}
                rv = meta.get("resourceVersion") or rv
                if event["type"] == "ADDED":
                    owner = (meta.get("labels") or {}).get("ray.io/cluster", "")
                    self.seen.setdefault(owner, {}).setdefault(meta["name"], time.monotonic())
                    self.changed.set()

    def count(self, owner: str | None = None) -> int:
        if owner is None:
            return sum(len(v) for v in self.seen.values())
        return len(self.seen.get(owner, {}))

    async def until(self, owner: str | None, pods: int, timeout: float, op: Operator) -> float:
        """Wait until ``owner`` (all when None) has ``pods`` Pods; the time the last one was seen."""
        deadline = time.monotonic() + timeout
        while self.count(owner) < pods:
            if op.proc.poll() is not None:
                raise Failed(f"the operator exited: {[line[:300] for line in op.tail[-3:]]}")
            if time.monotonic() > deadline:
                raise Failed(f"{owner}: {self.count(owner)} of {pods} Pods after {timeout}s")
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), 1.0)
        times = [t for o, pods_ in self.seen.items() if owner in (None, o) for t in pods_.values()]
        return max(times)


def writes(op: Operator) -> tuple[float, float]:
    """The operator's API writes so far, and its RayCluster reconciles."""
    families = op.scrape()
    requests = families.get("rest_client_requests")
    reconciles = families.get("controller_runtime_reconcile")
    return sum(
        s.value
        for s in (requests.samples if requests else [])
        if s.name == "rest_client_requests_total" and s.labels.get("method", "").upper() not in READS
    ), sum(
        s.value
        for s in (reconciles.samples if reconciles else [])
        if s.name == "controller_runtime_reconcile_total"
        and s.labels.get("controller") == "raycluster-controller"
    )


async def run_case(
    case: str, kubeconfig: Path, args: argparse.Namespace, arm: dict[str, Any]
) -> dict[str, Any]:
    label = f"{case}-{arm['name']}"
    ns = f"{label}-{os.getpid()}"[:63]
    config = await load_config(str(kubeconfig), qps=1000, burst=1000)
    throttle: Throttle | None = arm["throttle"]
    result: dict[str, Any] = {}
    throttled0 = (throttle.throttled_s() if throttle is not None else None) or 0.0
    async with Client(config) as client:
        await client.create(NAMESPACES, {"metadata": {"name": ns}})
        op = Operator(kubeconfig, ns, throttle, env=arm["env"], command=arm["command"](label))
        profiling = False
        watch = PodWatch(client, ns)
        watcher = asyncio.create_task(watch.run())
        try:
            await asyncio.to_thread(op.wait_serving, 300)
            await asyncio.sleep(1.0)  # leader election and the caches' first lists
            if case == "converge":
                cpu0, writes0 = op.cpu_split_s(), await asyncio.to_thread(writes, op)
                lines0 = op.log_lines
                profiling = toggle_profile(op, arm, on=True)
                start = time.monotonic()
                for i in range(args.clusters):
                    await client.create(RAYCLUSTERS, cluster(f"rc-{i:03d}", args.workers), ns)
                last = await watch.until(None, args.clusters * (args.workers + 1), args.timeout, op)
                profiling = toggle_profile(op, arm, on=False)
                result.update(
                    wall_s=round(last - start, 2),
                    operator_cpu_s=round(op.cpu_s() - sum(cpu0), 3),
                    operator_kernel_cpu_s=round(op.cpu_split_s()[1] - cpu0[1], 3),
                    log_lines=op.log_lines - lines0,
                )
                await asyncio.sleep(2.0)  # the status writes after the last Pod
                cpu1 = op.cpu_s()
                profiling = toggle_profile(op, arm, on=True)  # the idle window: <label>-2.pstats
                await asyncio.sleep(args.idle)
                profiling = toggle_profile(op, arm, on=False)
                writes1 = await asyncio.to_thread(writes, op)
                events = await client.list_all(EVENTS, ns)
                reasons = collections.Counter(event.get("reason", "") for event in events["items"])
                result.update(
                    events_by_reason=dict(sorted(reasons.items())),
                    idle_cpu_s=round(op.cpu_s() - cpu1, 3),
                    api_writes=int(writes1[0] - writes0[0]),  # the status writes after the Pods too
                    reconciles=int(writes1[1] - writes0[1]),
                    peak_rss_mib=round(op.proc_status("VmHWM") / 1024, 1),
                )
            else:
                scale = case == "scale-after-big"
                if scale:
                    for name in ("big", "small"):
                        await client.create(RAYCLUSTERS, cluster(name, 0), ns)
                    await watch.until(None, 2, args.timeout, op)  # the two heads
                    await asyncio.sleep(2.0)
                cpu0 = op.cpu_split_s()
                profiling = toggle_profile(op, arm, on=True)
                start = time.monotonic()
                if scale:
                    await patch_replicas(client, ns, "big", args.big)
                else:
                    await client.create(RAYCLUSTERS, cluster("big", args.big), ns)
                await asyncio.sleep(NEIGHBOUR_DELAY)
                small_start = time.monotonic()
                if scale:
                    await patch_replicas(client, ns, "small", args.small)
                else:
                    await client.create(RAYCLUSTERS, cluster("small", args.small), ns)
                small_pods = args.small + (0 if scale else 1)
                small_done = await watch.until("small", small_pods + (1 if scale else 0), args.timeout, op)
                big_done = await watch.until("big", args.big + 1, args.timeout, op)
                profiling = toggle_profile(op, arm, on=False)
                result.update(
                    small_s=round(small_done - small_start, 2),
                    big_s=round(big_done - start, 2),
                    big_pods_when_small_done=sum(
                        1 for t in watch.seen.get("big", {}).values() if t <= small_done
                    ),
                    operator_cpu_s=round(op.cpu_s() - sum(cpu0), 3),
                    operator_kernel_cpu_s=round(op.cpu_split_s()[1] - cpu0[1], 3),
                )
        except Failed as exc:
            result["failed"] = str(exc)
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await watcher
            if throttle is not None and throttle.throttled_s() is not None:
                result["cgroup_throttled_s"] = round((throttle.throttled_s() or 0.0) - throttled0, 2)
            if profiling:
                toggle_profile(op, arm, on=False)
                await asyncio.sleep(2.0)
            result["exit_code"] = op.stop()
    print(f"{label}: {json.dumps(result)}", flush=True)
    return result


def toggle_profile(op: Operator, arm: dict[str, Any], *, on: bool) -> bool:
    """SIGUSR1 starts the profiled operator's cProfile, SIGUSR2 stops it and writes the stats."""
    if arm["profiled"]:
        op.proc.send_signal(signal.SIGUSR1 if on else signal.SIGUSR2)
    return on and arm["profiled"]


async def patch_replicas(client: Client, ns: str, name: str, replicas: int) -> None:
    current = await client.get(RAYCLUSTERS, name, ns)
    groups = copy.deepcopy(current["spec"]["workerGroupSpecs"])
    groups[0]["replicas"] = replicas
    await client.patch(RAYCLUSTERS, name, {"spec": {"workerGroupSpecs": groups}}, ns)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--clusters", type=int, default=50)
    p.add_argument("--workers", type=int, default=10)
    p.add_argument("--big", type=int, default=1000)
    p.add_argument("--small", type=int, default=10)
    p.add_argument("--idle", type=float, default=30.0, help="quiet seconds measured after convergence")
    p.add_argument("--cases", default=",".join(CASES), help=f"comma-separated subset of {','.join(CASES)}")
    p.add_argument("--quota", action=argparse.BooleanOptionalAction, default=True, help="run under 100m")
    p.add_argument("--quota-only", action="store_true", help="skip the unthrottled runs")
    p.add_argument("--baseline", type=Path, help="another checkout whose operator runs the same cases")
    p.add_argument("--profile", type=Path, help="record py-spy raw stacks of each run into this directory")
    p.add_argument(
        "--baseline-python",
        type=Path,
        help="the interpreter (a venv's python) whose kuberay-operator the baseline arm runs",
    )
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="rounds of each case, new and baseline alternating; ratios are the median round's",
    )
    args = p.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    for c in cases:
        if c not in CASES:
            raise SystemExit(f"unknown case {c!r}; expected some of {CASES}")
    throttle = Throttle()
    modes: list[tuple[str, Throttle | None]] = [] if args.quota_only else [("unthrottled", None)]
    if args.quota:
        modes.append(("100m", throttle))
    trees = [("new", ROOT)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])

    def command(label: str, python: Path) -> tuple[str, ...]:
        if args.profile is None:
            return (str(python.with_name("kuberay-operator")),)
        args.profile.mkdir(parents=True, exist_ok=True)
        out = args.profile.resolve() / f"{label}.pstats"
        return (str(python), str(ROOT / "bench" / "profiled_operator.py"), str(out))

    results: dict[str, Any] = {}
    rounds: dict[str, list[dict[str, Any]]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="kuberay-quota-fairness-") as tmp:
            with control_plane(Path(tmp)) as kubeconfig:
                for case in cases:
                    for mode, thr in modes:
                        for round_ in range(args.repeat):
                            for tree_name, tree in trees:
                                suffix = f"-r{round_}" if args.repeat > 1 else ""
                                arm = {
                                    "name": f"{mode}-{tree_name}{suffix}",
                                    "throttle": thr,
                                    "env": dict(os.environ, PYTHONPATH=str(tree)),
                                    "command": functools.partial(
                                        command,
                                        python=(args.baseline_python if tree_name == "baseline" else None)
                                        or Path(sys.executable),
                                    ),
                                    "profiled": args.profile is not None,
                                }
                                key = f"{case}/{mode}/{tree_name}"
                                result = asyncio.run(run_case(case, kubeconfig, args, arm))
                                rounds.setdefault(key, []).append(result)
                                results[key + suffix.replace("-", "/")] = result
    finally:
        throttle.close()

    ratios: dict[str, float] = {}
    for key, news in rounds.items():
        if not key.endswith("/new"):
            continue
        bases = rounds.get(key.removesuffix("/new") + "/baseline") or []
        for field in ("wall_s", "operator_cpu_s", "api_writes", "idle_cpu_s", "small_s"):
            # Per round, new over the baseline run right after it, so both saw the same load.
            per_round = sorted(
                new[field] / base[field]
                for new, base in zip(news, bases, strict=False)
                if base.get(field) and new.get(field) is not None
            )
            if per_round:
                ratios[f"{key.removesuffix('/new')}/{field}"] = round(per_round[len(per_round) // 2], 3)
    summary = {
        "workload": {
            "clusters": args.clusters,
            "workers": args.workers,
            "big": args.big,
            "small": args.small,
        },
        "throttle": throttle.kind,
        "results": results,
        "new_vs_baseline": ratios,
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
