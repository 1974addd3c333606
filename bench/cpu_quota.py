"""The operator in KubeRay's default resources: a 100m CPU quota, against the same run unthrottled.

KubeRay's Helm chart gives the operator ``limits: {cpu: 100m, memory: 512Mi}``. A Deployment that
swaps only the image keeps them, so kuberay-py must converge a realistic load at a tenth of a
core and keep its head-proxy checks on their period. This bench runs the real ``kuberay-operator``
process with the chart's rendered args (``tests/fixtures/kuberay/install/helm-chart-v1.7.0-default.yaml``,
plus the kubeconfig and free ports) twice in one invocation, unthrottled and then under the
quota, each against a fresh namespace of 50 RayClusters x 10 workers and 20 RayServices
(``config/samples``), and reports per run:

* ``converge_s``: first create to every RayCluster ``ready`` and every RayService ``Ready=True``;
* ``reconcile_p99_s``: p99 of ``controller_runtime_reconcile_time_seconds`` (RayCluster and
  RayService controllers together, bucket-interpolated as PromQL's ``histogram_quantile``) over
  the whole run, from the operator's own ``/metrics``;
* ``probe_period_s`` and ``probe_period_drift``: over a steady window after convergence, the mean
  period between checks of one head proxy (window x targets / checks, from
  ``kuberay_head_proxy_health_checks_total`` and ``..._targets``) and its drift from the
  configured 5 s;
* ``operator_cpu_s`` and ``peak_rss_mib`` (``VmHWM``) of the operator process.

Ratios (throttled / unthrottled) are from the same invocation. The last line is JSON.

The quota is a CPU cgroup, as the kubelet sets it: cgroup v2 ``cpu.max = 10000 100000`` when the
unified hierarchy is mounted and writable, else cgroup v1 ``cpu.cfs_quota_us = 10000`` with
``cpu.cfs_period_us = 100000`` (what this machine has), entered before ``exec`` so start-up is
throttled too. Without a writable cgroup (not root, read-only /sys) it falls back to a
SIGSTOP/SIGCONT duty cycle (10 ms running in every 100 ms), which caps wall-clock time rather than
CPU time and so is harsher; the JSON says which was used. The API server, simulator and fake Ray
run unthrottled in a ``kuberay-operator demo --no-operator`` subprocess (each run deletes its objects
before the next starts, so the runs do not share the simulator's load), with Pod addresses from a
loopback block (one simulated node's /24 pod network would cap the cluster at 253 Pods).

    .venv/bin/python bench/cpu_quota.py                      # 50 x 10 + 20, about 6 min here
    .venv/bin/python bench/cpu_quota.py --clusters 10 --services 4 --steady 20   # quicker
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controllers.constants import RAYCLUSTERS, RAYSERVICES  # noqa: E402
from kuberay_py.client import Client, load_config  # noqa: E402
from kuberay_py.client.resources import NAMESPACES, PODS  # noqa: E402

OPERATOR = Path(sys.executable).with_name("kuberay-operator")
HELM = ROOT / "tests" / "fixtures" / "kuberay" / "install" / "helm-chart-v1.7.0-default.yaml"
SAMPLES = ROOT / "config" / "samples"
QUOTA_US, PERIOD_US = 10_000, 100_000  # 100m
PROBE_PERIOD = 5.0  # --head-proxy-health-period's default


def chart_args() -> list[str]:
    docs = [d for d in yaml.safe_load_all(HELM.read_text()) if d]
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["/manager"]
    assert container["resources"]["limits"]["cpu"] == "100m"
    return list(container["args"])


# -- the CPU quota ------------------------------------------------------------------------------


class Throttle:
    """Where the throttled operator runs: a cgroup with a 100m quota, or a duty-cycle fallback."""

    def __init__(self) -> None:
        self.kind = "none"
        self.path: Path | None = None
        name = f"kuberay-bench-{os.getpid()}"
        unified = Path("/sys/fs/cgroup")
        v1 = Path("/sys/fs/cgroup/cpu")
        with contextlib.suppress(OSError):
            if (unified / "cgroup.controllers").exists():
                path = unified / name
                path.mkdir()
                (path / "cpu.max").write_text(f"{QUOTA_US} {PERIOD_US}\n")
                self.kind, self.path = "cgroup-v2 cpu.max", path
            elif (v1 / "cpu.cfs_quota_us").exists():
                path = v1 / name
                path.mkdir()
                (path / "cpu.cfs_period_us").write_text(f"{PERIOD_US}\n")
                (path / "cpu.cfs_quota_us").write_text(f"{QUOTA_US}\n")
                self.kind, self.path = "cgroup-v1 cpu.cfs_quota_us", path
        if self.path is None:
            self.kind = "sigstop-duty-cycle"
        self._stop = threading.Event()

    def preexec(self) -> None:
        """Runs in the child before exec: join the cgroup, so every thread it starts is in it."""
        if self.path is not None:
            (self.path / "cgroup.procs").write_text(f"{os.getpid()}\n")

    def start_duty_cycle(self, pid: int) -> None:
        if self.path is not None:
            return

        def cycle() -> None:
            run, period = QUOTA_US / 1e6, PERIOD_US / 1e6
            while not self._stop.is_set():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
                time.sleep(run)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGSTOP)
                time.sleep(period - run)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

        threading.Thread(target=cycle, daemon=True).start()

    def throttled_s(self) -> float | None:
        """cgroup's own count of time the quota held the operator back (None for the fallback)."""
        if self.path is None:
            return None
        stat = dict(
            line.split() for line in (self.path / "cpu.stat").read_text().splitlines() if line.strip()
        )
        if "throttled_usec" in stat:
            return int(stat["throttled_usec"]) / 1e6
        return int(stat.get("throttled_time", 0)) / 1e9

    def close(self) -> None:
        self._stop.set()
        if self.path is not None:
            with contextlib.suppress(OSError):
                self.path.rmdir()


# -- processes ----------------------------------------------------------------------------------


def start_cluster(tmp: Path) -> tuple[subprocess.Popen[str], Path]:
    """API server + simulator + fake Ray (no operator), as ``demo --no-operator`` runs them."""
    kubeconfig, empty = tmp / "kubeconfig", tmp / "empty.yaml"
    empty.write_text("")
    # One simulated node's /24 pod network holds 253 Pods; this workload has about 600. The
    # loopback fallback (a 127.N.0.0/16 block, which the built-in API server accepts) has room.
    env = dict(os.environ, KUBERAY_SIM_ROUTE_COMMAND="false")
    proc = subprocess.Popen(
        [str(OPERATOR), "demo", "--no-operator", "-f", str(empty), "--kubeconfig-out", str(kubeconfig)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("embedded cluster only"):
            break
    else:
        raise SystemExit(f"the demo cluster did not start (exit {proc.wait()})")
    threading.Thread(target=lambda: [None for _ in proc.stdout or []], daemon=True).start()
    return proc, kubeconfig


class Exited(Exception):
    """The operator process ended before the measurement did."""


class Operator:
    """The real ``kuberay-operator`` with the chart's args; its log is read for the bound ports."""

    def __init__(
        self,
        kubeconfig: Path,
        namespace: str,
        throttle: Throttle | None,
        extra: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        command: tuple[str, ...] = (str(OPERATOR),),
    ) -> None:
        args = [
            *chart_args(),
            "--kubeconfig",
            str(kubeconfig),
            "--metrics-addr",
            "127.0.0.1:0",
            "--health-probe-bind-address",
            "127.0.0.1:0",
            "--leader-election-namespace",
            namespace,
            "--watch-namespace",
            namespace,
            *extra,
        ]
        self.proc = subprocess.Popen(
            [*command, *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=throttle.preexec if throttle is not None else None,
            env=env,
        )
        if throttle is not None:
            throttle.start_duty_cycle(self.proc.pid)
        self.metrics_url = ""
        self.tail: list[str] = []  # its last log lines, shown if it exits early
        self.log_lines = 0  # every line it logged: each one was rendered and written on its CPU
        self._ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log_lines += 1
            self.tail = [*self.tail[-40:], line.rstrip()]
            with contextlib.suppress(ValueError):
                rec = json.loads(line)
                if rec.get("event") == "serving" and rec.get("server") == "metrics":
                    self.metrics_url = rec["url"] + "/metrics"
                    self._ready.set()

    def wait_serving(self, timeout: float) -> None:
        if not self._ready.wait(timeout):
            raise SystemExit("the operator did not start serving /metrics")

    def scrape(self) -> dict[str, Any]:
        try:
            with urllib.request.urlopen(self.metrics_url, timeout=30) as resp:
                return {f.name: f for f in text_string_to_metric_families(resp.read().decode())}
        except OSError:
            time.sleep(1.0)
            if self.proc.poll() is not None:
                raise Exited from None
            raise

    def proc_status(self, key: str) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
        return 0

    def cpu_s(self) -> float:
        user, system = self.cpu_split_s()
        return user + system

    def cpu_split_s(self) -> tuple[float, float]:
        """User and kernel CPU seconds (each socket write and epoll wake-up is kernel time)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        tick = os.sysconf("SC_CLK_TCK")
        return int(fields[11]) / tick, int(fields[12]) / tick

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGCONT)
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(10)


# -- measurements -------------------------------------------------------------------------------


def reconcile_buckets(families: dict[str, Any]) -> dict[float, float]:
    """Cumulative bucket counts of the RayCluster and RayService controllers' reconcile times."""
    family = families.get("controller_runtime_reconcile_time_seconds")
    buckets: dict[float, float] = {}
    for sample in family.samples if family else []:
        if sample.name.endswith("_bucket") and sample.labels.get("controller") in (
            "raycluster-controller",
            "rayservice-controller",
        ):
            le = float(sample.labels["le"])
            buckets[le] = buckets.get(le, 0.0) + sample.value
    return buckets


def quantile(q: float, buckets: dict[float, float]) -> float | None:
    """PromQL's ``histogram_quantile`` over cumulative buckets."""
    edges = sorted(buckets)
    if not edges or buckets[edges[-1]] == 0:
        return None
    rank = q * buckets[edges[-1]]
    lower, below = 0.0, 0.0
    for edge in edges:
        count = buckets[edge]
        if count >= rank:
            if edge == float("inf"):
                return lower
            return lower + (edge - lower) * ((rank - below) / max(count - below, 1e-12))
        lower, below = edge, count
    return lower


def counter(families: dict[str, Any], name: str) -> float:
    family = families.get(name.removesuffix("_total"))
    return sum(s.value for s in family.samples if s.name == name) if family else 0.0


def gauge(families: dict[str, Any], name: str) -> float:
    family = families.get(name)
    return sum(s.value for s in family.samples) if family else 0.0


async def clean_up(client: Client, ns: str, limit: float = 300.0) -> None:
    """Delete the run's objects while its operator still runs (finalizers), until its Pods are gone.

    Otherwise the next run would share the simulator and fake Ray with this run's ~600 Pods.
    """
    for res in (RAYSERVICES, RAYCLUSTERS):
        for item in (await client.list(res, ns))["items"]:
            with contextlib.suppress(Exception):
                await client.delete(res, item["metadata"]["name"], ns)
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if not (await client.list(PODS, ns))["items"]:
            return
        await asyncio.sleep(2.0)


def workload(clusters: int, services: int, workers: int) -> list[tuple[Any, dict[str, Any]]]:
    rc = yaml.safe_load((SAMPLES / "ray-cluster.sample.yaml").read_text())
    group = rc["spec"]["workerGroupSpecs"][0]
    group.update(replicas=workers, minReplicas=workers, maxReplicas=workers)
    svc = yaml.safe_load((SAMPLES / "ray-service.sample.yaml").read_text())
    objects: list[tuple[Any, dict[str, Any]]] = []
    for i in range(clusters):
        body = copy.deepcopy(rc)
        body["metadata"] = {"name": f"rc-{i:03d}"}
        objects.append((RAYCLUSTERS, body))
    for i in range(services):
        body = copy.deepcopy(svc)
        body["metadata"] = {"name": f"svc-{i:03d}"}
        objects.append((RAYSERVICES, body))
    return objects


async def converged(client: Client, ns: str, clusters: int, services: int) -> bool:
    rcs = (await client.list(RAYCLUSTERS, ns))["items"]
    svcs = (await client.list(RAYSERVICES, ns))["items"]
    own = [r for r in rcs if r["metadata"]["name"].startswith("rc-")]
    ready_rc = sum(1 for r in own if (r.get("status") or {}).get("state") == "ready")
    ready_svc = sum(
        1
        for s in svcs
        if any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (s.get("status") or {}).get("conditions") or []
        )
    )
    return ready_rc == clusters and ready_svc == services


async def one_run(
    label: str,
    kubeconfig: Path,
    args: argparse.Namespace,
    throttle: Throttle | None,
    extra: tuple[str, ...] = (),
) -> dict[str, Any]:
    ns = f"bench-{label}-{os.getpid()}"
    config = await load_config(str(kubeconfig), qps=1000, burst=1000)
    result: dict[str, Any] = {"extra_args": list(extra)}
    throttled_before = (throttle.throttled_s() if throttle is not None else None) or 0.0
    async with Client(config) as client:
        await client.create(NAMESPACES, {"metadata": {"name": ns}})
        op = Operator(kubeconfig, ns, throttle, extra)
        start = time.monotonic()
        try:
            op.wait_serving(300)
            start = time.monotonic()
            for res, body in workload(args.clusters, args.services, args.workers):
                await client.create(res, body, ns)
            deadline = start + args.timeout
            while not await converged(client, ns, args.clusters, args.services):
                if op.proc.poll() is not None:
                    raise Exited
                if time.monotonic() > deadline:
                    raise SystemExit(f"{label}: not converged after {args.timeout}s")
                await asyncio.sleep(1.0)
            result["converge_s"] = round(time.monotonic() - start, 2)
            families = await asyncio.to_thread(op.scrape)
            p99 = quantile(0.99, reconcile_buckets(families))
            checks_before = counter(families, "kuberay_head_proxy_health_checks_total")
            t0 = time.monotonic()
            await asyncio.sleep(args.steady)
            if op.proc.poll() is not None:
                raise Exited
            families = await asyncio.to_thread(op.scrape)
            window = time.monotonic() - t0
            checks = counter(families, "kuberay_head_proxy_health_checks_total") - checks_before
            targets = gauge(families, "kuberay_head_proxy_health_check_targets")
            period = window * targets / checks if checks else None
            result.update(
                reconcile_p99_s=None if p99 is None else round(p99, 4),
                probe_targets=int(targets),
                probe_period_s=None if period is None else round(period, 3),
                probe_period_drift=None if period is None else round(period / PROBE_PERIOD - 1, 4),
                operator_cpu_s=round(op.cpu_s(), 2),
                peak_rss_mib=round(op.proc_status("VmHWM") / 1024, 1),
            )
        except Exited:
            await asyncio.sleep(0.5)  # let the reader thread drain the pipe
            errors = [json.loads(line) for line in op.tail if '"level":"error"' in line]
            result.update(
                converged=False,
                exited_after_s=round(time.monotonic() - start, 1),
                last_errors=[e.get("event") for e in errors[-3:]],
            )
        finally:
            if op.proc.poll() is None:
                await clean_up(client, ns)
            if throttle is not None and throttle.throttled_s() is not None:
                result["cgroup_throttled_s"] = round((throttle.throttled_s() or 0.0) - throttled_before, 2)
            result["exit_code"] = op.stop()
    print(f"{label}: {json.dumps(result)}", flush=True)
    return result


@contextlib.contextmanager
def cluster_process() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="kuberay-cpu-quota-") as tmp:
        proc, kubeconfig = start_cluster(Path(tmp))
        try:
            yield kubeconfig
        finally:
            interrupt(proc)


def interrupt(proc: subprocess.Popen[str]) -> None:
    """SIGINT, as Ctrl-C stops a control plane; killed if it has not ended within a minute."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--clusters", type=int, default=50)
    p.add_argument("--workers", type=int, default=10)
    p.add_argument("--services", type=int, default=20)
    p.add_argument("--steady", type=float, default=30.0, help="seconds of probe-period window")
    p.add_argument("--timeout", type=float, default=900.0, help="give up converging after this long")
    p.add_argument(
        "--without-leader-election-too",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="a third run under the quota with --enable-leader-election=false appended",
    )
    args = p.parse_args()
    throttle = Throttle()
    try:
        with cluster_process() as kubeconfig:
            free = asyncio.run(one_run("unthrottled", kubeconfig, args, None))
            quota = asyncio.run(one_run("cpu-100m", kubeconfig, args, throttle))
            no_le: dict[str, Any] | None = None
            if args.without_leader_election_too:
                no_le = asyncio.run(
                    one_run("cpu-100m-no-le", kubeconfig, args, throttle, ("--enable-leader-election=false",))
                )
    finally:
        throttle.close()

    def ratio(key: str, run: dict[str, Any] | None) -> float | None:
        a, b = free.get(key), (run or {}).get(key)
        return round(b / a, 3) if a and b is not None else None

    print(
        json.dumps(
            {
                "workload": {
                    "rayclusters": args.clusters,
                    "workers_each": args.workers,
                    "rayservices": args.services,
                },
                "throttle": throttle.kind,
                "unthrottled": free,
                "cpu_100m": quota,
                "cpu_100m_no_leader_election": no_le,
                "converge_ratio": ratio("converge_s", quota),
                "reconcile_p99_ratio": ratio("reconcile_p99_s", quota),
                "probe_period_ratio": ratio("probe_period_s", quota),
                "no_le_converge_ratio": ratio("converge_s", no_le),
                "no_le_reconcile_p99_ratio": ratio("reconcile_p99_s", no_le),
                "no_le_probe_period_ratio": ratio("probe_period_s", no_le),
            }
        )
    )


if __name__ == "__main__":
    main()
