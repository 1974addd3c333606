"""RayJob controller at scale: N concurrent RayJobs (default 200) from create to cluster clean-up.

Everything runs in this process: the built-in API server, the cluster simulator with fake Ray
heads (raysim, HTTP job API on each head's Pod address), a RayCluster controller on its own
manager, and the RayJob controller on another, so the RayJob controller's API requests are
counted on their own client. Jobs use HTTPMode (the operator submits; no submitter Pods, so the
simulator's cost stays with the heads), head-only clusters, ``shutdownAfterJobFinishes`` and an
entrypoint ``sleep <job_s>``: all N run at the same time.

Reported (final JSON line):

* ``api_requests_per_job`` / ``api_writes_per_job``: the RayJob controller's API requests (list
  and watch excluded: the informers' cost does not grow with requests) per job from create to
  its RayCluster deleted, and ``writes_ratio_vs_minimum`` over the minimum a correct controller
  needs: finalizer patch, RayCluster create, ``<rayjob>-head-svc`` create, status writes
  Initializing / Running / Ray RUNNING / Complete, RayCluster delete = 8;
* ``steady_api_requests`` / ``steady_dashboard_requests``: what it sends, during a 15 s window
  opened once 40 % of the jobs run, for the ``steady_jobs`` RayJobs that are Running with Ray
  RUNNING throughout (nothing changes, so nothing should be written), against KubeRay's one
  dashboard poll per job every 3 s (``kuberay_steady_dashboard_requests``);
* ``dashboard_requests_per_job`` and ``kuberay_dashboard_requests_per_job``: dashboard calls per
  job over its life, ours (adaptive: 1 s after a change, doubling to 30 s) against KubeRay's
  one poll every 3 s of ``Running`` (``job_s / 3``), and their ratio, measured in the same run;
* ``wall_s``: create to every cluster deleted.

Run: ``.venv/bin/python bench/rayjob_scale.py [--jobs 200 --job-s 120 --steady 15]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controllers.constants import RAYCLUSTERS, RAYJOBS  # noqa: E402
from controllers.ray.dashboard import DashboardClientFactory  # noqa: E402
from controllers.raycluster.setup import cache_selectors, cache_transforms  # noqa: E402
from controllers.raycluster.setup import setup as setup_raycluster  # noqa: E402
from controllers.rayjob.options import RayJobOptions  # noqa: E402
from controllers.rayjob.setup import setup as setup_rayjob  # noqa: E402
from controllers.raysim import RayPodRuntime, Timings  # noqa: E402
from kuberay_py.client import Client  # noqa: E402
from kuberay_py.envtest import Environment  # noqa: E402
from kuberay_py.log import configure  # noqa: E402
from kuberay_py.manager import Manager, ManagerOptions  # noqa: E402
from tests.rayjob_harness import CRD_DIR, rayjob  # noqa: E402

MINIMUM_WRITES = 8
WRITES = {"POST", "PUT", "PATCH", "DELETE"}
JOB_IN_PATH = re.compile(r"/(?:rayjobs|rayclusters|services)/(rj-\d{3})")
COLLECTIONS = {"rayjobs", "rayclusters", "jobs", "services", "pods", "secrets", "events", "endpointslices"}


def job_of(path: str) -> str | None:
    """The RayJob a request is about (its status, its cluster, its head Service), from the path."""
    found = JOB_IN_PATH.search(path)
    return found.group(1) if found else None


class Counting:
    def __init__(self, client: Client) -> None:
        self.calls: Counter[str] = Counter()
        self.by_job: Counter[str] = Counter()  # non-list/watch requests per RayJob
        original = client.request

        async def request(method: str, path: str, **kw: Any) -> Any:
            query = kw.get("query") or {}
            watch = str(query.get("watch", "")).lower() in ("true", "1")
            listing = method.upper() == "GET" and path.rstrip("/").split("/")[-1] in COLLECTIONS
            kind = "WATCH" if watch else ("EVENT" if "/events" in path else method.upper())
            if kind == "GET" and listing:
                kind = "LIST"
            self.calls[kind] += 1
            job = job_of(path)
            if job is not None and kind not in ("WATCH", "LIST"):
                self.by_job[job] += 1
            return await original(method, path, **kw)

        client.request = request  # type: ignore[method-assign]

    def requests(self) -> int:
        return sum(n for k, n in self.calls.items() if k not in ("WATCH", "LIST"))

    def writes(self) -> int:
        return sum(n for k, n in self.calls.items() if k in WRITES)


def manager(config: Any, ns: str) -> Manager:
    return Manager(
        config,
        ManagerOptions(
            metrics_bind_address="0",
            health_probe_bind_address="0",
            namespaces=[ns],
            cache_selectors=cache_selectors(),
            cache_transforms=cache_transforms(),
            graceful_shutdown_timeout=10.0,
        ),
    )


async def states(client: Client, ns: str) -> Counter[str]:
    items = (await client.list(RAYJOBS, ns))["items"]
    return Counter(str((j.get("status") or {}).get("jobDeploymentStatus") or "New") for j in items)


async def running_jobs(client: Client, ns: str) -> set[str]:
    """RayJobs in Running whose Ray job is RUNNING (nothing left to change until it ends)."""
    items = (await client.list(RAYJOBS, ns))["items"]
    return {
        j["metadata"]["name"]
        for j in items
        if (j.get("status") or {}).get("jobDeploymentStatus") == "Running"
        and (j.get("status") or {}).get("jobStatus") == "RUNNING"
    }


async def steady_window(
    client: Client, ns: str, counter: Counting, reconciler: Any, window: float
) -> dict[str, Any]:
    """What the operator sends for jobs that stay Running + RUNNING through a ``window``-second span."""
    first = await running_jobs(client, ns)
    api0 = dict(counter.by_job)
    polls0 = {n: reconciler.memory.polls(f"{ns}/{n}") for n in first}
    await asyncio.sleep(window)
    stayed = first & await running_jobs(client, ns)
    api = sum(counter.by_job.get(n, 0) - api0.get(n, 0) for n in stayed)
    polls = sum(reconciler.memory.polls(f"{ns}/{n}") - polls0[n] for n in stayed)
    return {
        "steady_window_s": window,
        "steady_jobs": len(stayed),
        "steady_api_requests": api,
        "steady_dashboard_requests": polls,
        "kuberay_steady_dashboard_requests": round(len(stayed) * window / 3.0),
    }


async def run(jobs: int, job_s: float, window: float, steady_share: float = 0.4) -> dict[str, Any]:
    runtime = RayPodRuntime(timings=Timings(build_s=0.3, replica_start_s=0.3, drain_s=1.0))
    async with Environment([str(CRD_DIR)], simulate=True, pod_runtime=runtime, probe_period_scale=0.1) as env:
        ns = await env.create_namespace()
        clusters_mgr = manager(env.client_config, ns)
        setup_raycluster(clusters_mgr, max_concurrent_reconciles=8)
        jobs_mgr = manager(env.client_config, ns)
        options = RayJobOptions(poll_min=1.0, poll_max=30.0)
        reconciler = setup_rayjob(
            jobs_mgr, dashboard_factory=DashboardClientFactory(), options=options, max_concurrent_reconciles=8
        )
        counter = Counting(jobs_mgr.client)
        tasks = [asyncio.create_task(m.run(install_signal_handlers=False)) for m in (clusters_mgr, jobs_mgr)]
        driver = env.new_client()
        t0 = time.perf_counter()
        sem = asyncio.Semaphore(20)

        async def make(i: int) -> None:
            doc = rayjob(
                f"rj-{i:03d}", f"sleep {job_s:g}", submissionMode="HTTPMode", shutdownAfterJobFinishes=True
            )
            async with sem:
                await driver.create(RAYJOBS, doc, ns)

        await asyncio.gather(*(make(i) for i in range(jobs)))
        steady: dict[str, Any] = {}
        while time.perf_counter() - t0 < 1800:
            counts = await states(driver, ns)
            clusters = len((await driver.list(RAYCLUSTERS, ns))["items"])
            if not steady and len(await running_jobs(driver, ns)) >= jobs * steady_share:
                steady = await steady_window(driver, ns, counter, reconciler, window)
            if counts.get("Complete", 0) == jobs and clusters == 0:
                break
            await asyncio.sleep(1.0)
        wall = time.perf_counter() - t0
        polls = reconciler.memory.total_polls()
        result = {
            "jobs": jobs,
            "job_s": job_s,
            "complete": (await states(driver, ns)).get("Complete", 0),
            "wall_s": round(wall, 1),
            "api_requests_per_job": round(counter.requests() / jobs, 2),
            "api_writes_per_job": round(counter.writes() / jobs, 2),
            "minimum_writes_per_job": MINIMUM_WRITES,
            "writes_ratio_vs_minimum": round(counter.writes() / jobs / MINIMUM_WRITES, 3),
            "requests_by_kind": dict(sorted(counter.calls.items())),
            **steady,
            "dashboard_requests_per_job": round(polls / jobs, 2),
            "kuberay_dashboard_requests_per_job": round(job_s / 3.0, 2),
            "dashboard_ratio_vs_kuberay": round((polls / jobs) / (job_s / 3.0), 3),
        }
        for m in (jobs_mgr, clusters_mgr):
            m.stop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.gather(*tasks), 30)
        await driver.close()
        await runtime.close()
        return result


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--jobs", type=int, default=200)
    p.add_argument("--job-s", type=float, default=120.0, help="how long each Ray job runs")
    p.add_argument("--steady", type=float, default=15.0, help="steady window while every job runs")
    args = p.parse_args()
    configure(level="warning", fmt="console")
    result = asyncio.run(run(args.jobs, args.job_s, args.steady))
    print(orjson.dumps(result).decode())


if __name__ == "__main__":
    main()
