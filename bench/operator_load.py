"""Operator load in steady state: our head-proxy checker vs two models of KubeRay's RayService.

200 RayServices, each with a cluster of 1 head and W workers (W in 2, 8, 32), all serving. For
each W, the same objects are run by three arms in turn, and a steady window is measured: HTTP
requests to Ray/s (proxy probes and Serve status GETs, counted by the fake Ray server), reconciles/s,
API requests/s and operator CPU seconds. The arms:

* ``new``: our RayService controller (the shared checker probes heads once per period; reconciles
  only on events);
* ``pre1808``: KubeRay *before* PR #1808 (v1.0 era): every reconcile probes every Pod of the
  cluster, one after the other, and requeues after 2 s;
* ``v170``: KubeRay v1.7.0's strategy (``rayservice_controller.go``), what a user compares against
  today: every reconcile ends with ``RequeueAfter: ServiceDefaultRequeueDuration`` (2 s) whatever
  happened; on the way it probes the *head* Pod's proxy ``/-/healthz`` of the active and the
  pending cluster (``updateHeadPodServeLabel``, 2 s client timeout) and GETs the Serve applications
  of the cluster it serves from the dashboard (``reconcileServe`` -> ``getAndCheckServeStatus``).
  Workers are not probed by the operator (their readiness probe is the kubelet's).

Both KubeRay arms run our reconcile first (so the objects stay as our controller keeps them; it
GETs the Serve applications once per reconcile, as both KubeRay versions do) and then add their
own probing and requeue.

Then, with W=2, every RayService is touched (an annotation) at a fixed rate while 10 % of the
heads hang (their proxy accepts and never answers), and the p99 reconcile latency of the *other*
RayServices is compared with the same run without hanging heads (our controller only).

Only the operator runs in this process; the API server (the built-in envtest server) and the fake
Ray heads/workers run in subprocesses, so ``time.process_time()`` is the operator's CPU. All
traffic is on loopback: worker Pods share 127.0.0.1; each head has its own 127.3.x.y address.

    .venv/bin/python bench/operator_load.py            # last line: JSON with the figures
    .venv/bin/python bench/operator_load.py --services 50 --window 5    # quicker
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from aiohttp import web

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controllers import constants as c  # noqa: E402
from controllers.common import heads  # noqa: E402
from controllers.constants import RAYCLUSTERS, RAYSERVICES  # noqa: E402
from controllers.ray.health import HeadProxyHealthChecker, HeadTarget, HealthResult  # noqa: E402
from controllers.rayservice.options import RayServiceOptions  # noqa: E402
from controllers.rayservice.reconciler import RayServiceReconciler  # noqa: E402
from controllers.rayservice.setup import setup as setup_rayservice  # noqa: E402
from kuberay_py.client import Client, load_config  # noqa: E402
from kuberay_py.client.resources import NAMESPACES, PODS  # noqa: E402
from kuberay_py.controller import Request, Result  # noqa: E402
from kuberay_py.manager.manager import Manager  # noqa: E402
from kuberay_py.manager.options import ManagerOptions  # noqa: E402
from kuberay_py.metrics import registry  # noqa: E402

PROXY_PORT = 28000
DASH_PORT = 28265
CTRL_PORT = 28999
OLD_REQUEUE = 2.0  # KubeRay's ServiceDefaultRequeueDuration (rayservice_controller.go)
OLD_PROBE_TIMEOUT = 2.0  # KubeRay's RayHTTPClientDirectTimeoutSeconds
ARMS = ("new", "pre1808", "v170")


def head_ip(i: int) -> str:
    return f"127.3.{i // 250}.{i % 250 + 1}"


# -- the fake Ray process ---------------------------------------------------------------------------


def serve_fake_ray(n_heads: int) -> None:
    """Proxies (``/-/healthz``) and dashboards (Serve GET/PUT) on every head address and 127.0.0.1.

    It counts what it answers (``GET /counts`` on the control port), so every arm's HTTP load on
    Ray is measured the same way, from the receiving side."""
    hanging: set[str] = set()
    counts = {"healthz": 0, "serve_get": 0, "serve_put": 0}
    doc = {
        "applications": {
            "fruit_app": {
                "name": "fruit_app",
                "status": "RUNNING",
                "message": "",
                "deployments": {"Fruit": {"name": "Fruit", "status": "HEALTHY", "message": ""}},
            }
        }
    }
    body = json.dumps(doc).encode()

    async def healthz(request: web.Request) -> web.Response:
        counts["healthz"] += 1
        local = request.transport.get_extra_info("sockname")[0] if request.transport else ""
        if local in hanging:
            await asyncio.sleep(3600)
        return web.Response(text="success")

    async def get_apps(request: web.Request) -> web.Response:
        counts["serve_get"] += 1
        return web.Response(body=body, content_type="application/json")

    async def put_apps(request: web.Request) -> web.Response:
        counts["serve_put"] += 1
        await request.read()
        return web.Response(status=200)

    async def control(request: web.Request) -> web.Response:
        hanging.clear()
        hanging.update((await request.json())["hang"])
        return web.Response(text="ok")

    async def get_counts(request: web.Request) -> web.Response:
        return web.json_response(counts)

    async def main() -> None:
        proxy = web.Application()
        proxy.router.add_get("/-/healthz", healthz)
        dash = web.Application()
        dash.router.add_get("/api/serve/applications/", get_apps)
        dash.router.add_put("/api/serve/applications/", put_apps)
        ctrl = web.Application()
        ctrl.router.add_post("/hang", control)
        ctrl.router.add_get("/counts", get_counts)
        runners = []
        for app in (proxy, dash, ctrl):
            r = web.AppRunner(app, handle_signals=False, access_log=None)
            await r.setup()
            runners.append(r)
        ips = ["127.0.0.1", *(head_ip(i) for i in range(n_heads))]
        for ip in ips:
            await web.TCPSite(runners[0], ip, PROXY_PORT, backlog=1024).start()
            await web.TCPSite(runners[1], ip, DASH_PORT, backlog=1024).start()
        await web.TCPSite(runners[2], "127.0.0.1", CTRL_PORT).start()
        print("ready", flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


# -- KubeRay's strategies: before PR #1808, and v1.7.0 ----------------------------------------------


class NoSharedChecker(HeadProxyHealthChecker):
    """KubeRay has no shared checker: no verdict ever, so the head-label phase leaves the label to
    the reconcile's own probing below."""

    def request(self, target: HeadTarget) -> None:
        return

    def latest(self, pod_uid: str) -> HealthResult | None:
        return None


class Pre1808Reconciler(RayServiceReconciler):
    """KubeRay before PR #1808: each reconcile probes *every* Pod's proxy and requeues after 2 s."""

    session: aiohttp.ClientSession | None = None

    def _session(self) -> aiohttp.ClientSession:
        if self.session is None:
            self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=OLD_PROBE_TIMEOUT))
        return self.session

    def _clusters(self, svc: dict[str, Any]) -> list[str]:
        status = svc.get("status") or {}
        names = (
            (status.get(key) or {}).get("rayClusterName")
            for key in ("activeServiceStatus", "pendingServiceStatus")
        )
        return [name for name in names if name]

    async def _label(self, pod: dict[str, Any], namespace: str) -> None:
        """Probe one Pod's proxy and set its serve label from the answer, as KubeRay does."""
        ip = (pod.get("status") or {}).get("podIP")
        if not ip:
            return
        try:
            url = f"http://{ip}:{heads.serve_port(pod)}/-/healthz"
            async with self._session().get(url) as resp:
                await resp.read()
                healthy = resp.status == 200
        except Exception:
            healthy = False
        desired = "true" if healthy else "false"
        if (pod["metadata"].get("labels") or {}).get(c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY) != desired:
            patch = {"metadata": {"labels": {c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY: desired}}}
            await self.deps.client.patch(PODS, pod["metadata"]["name"], patch, namespace)

    async def reconcile(self, request: Request) -> Result:
        await super().reconcile(request)
        svc = self.deps.cache.get(RAYSERVICES, request.name, request.namespace)
        if svc is None:
            return Result()
        for name in self._clusters(svc):
            for pod in self.deps.cache.list(PODS, request.namespace, labels={c.RAY_CLUSTER_LABEL_KEY: name}):
                await self._label(pod, request.namespace)
        return Result(requeue_after=OLD_REQUEUE)


class V170Reconciler(Pre1808Reconciler):
    """KubeRay v1.7.0: each reconcile probes the *head* proxy of the active and the pending cluster
    and requeues after 2 s whatever happened. The Serve applications GET of KubeRay's
    ``reconcileServe`` is the one our own reconcile (run first) already sends each time."""

    async def reconcile(self, request: Request) -> Result:
        await RayServiceReconciler.reconcile(self, request)
        svc = self.deps.cache.get(RAYSERVICES, request.name, request.namespace)
        if svc is None:
            return Result()
        for name in self._clusters(svc):
            labels = {c.RAY_CLUSTER_LABEL_KEY: name, c.RAY_NODE_TYPE_LABEL_KEY: "head"}
            for pod in self.deps.cache.list(PODS, request.namespace, labels=labels):
                await self._label(pod, request.namespace)
        return Result(requeue_after=OLD_REQUEUE)


# -- workload -------------------------------------------------------------------------------------


def rayservice(name: str, workers: int) -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load((ROOT / "config/samples/ray-service.sample.yaml").read_text())
    obj["metadata"] = {"name": name}
    obj["spec"]["serveConfigV2"] = yaml.safe_dump(
        {"applications": [{"name": "fruit_app", "import_path": "fruit:app", "route_prefix": "/fruit"}]}
    )
    spec = obj["spec"]["rayClusterConfig"]
    ports = [
        {"name": "dashboard", "containerPort": DASH_PORT},
        {"name": "serve", "containerPort": PROXY_PORT},
    ]
    spec["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"] = ports
    group = spec["workerGroupSpecs"][0]
    group.update(replicas=workers, minReplicas=workers, maxReplicas=max(workers, 5))
    group["template"]["spec"]["containers"][0]["ports"] = [ports[1]]
    return obj


def pod(ns: str, cluster: str, name: str, node_type: str, ip: str) -> dict[str, Any]:
    ports = [{"name": "serve", "containerPort": PROXY_PORT}]
    if node_type == "head":
        ports.insert(0, {"name": "dashboard", "containerPort": DASH_PORT})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {
                c.RAY_CLUSTER_LABEL_KEY: cluster,
                c.RAY_NODE_TYPE_LABEL_KEY: node_type,
                c.RAY_CLUSTER_SERVING_SERVICE_LABEL_KEY: "false" if node_type == "head" else "true",
            },
        },
        "spec": {
            "containers": [{"name": f"ray-{node_type}", "image": "rayproject/ray:2.52.0", "ports": ports}]
        },
        "_ip": ip,
    }


async def bounded(n: int, coros: list[Any]) -> None:
    sem = asyncio.Semaphore(n)

    async def one(coro: Any) -> None:
        async with sem:
            await coro

    await asyncio.gather(*(one(x) for x in coros))


async def create_workload(client: Client, ns: str, services: int, workers: int) -> dict[str, str]:
    """RayServices, then (once the controller created their clusters) Running and Ready Pods."""
    await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    await bounded(
        32, [client.create(RAYSERVICES, rayservice(f"svc-{i:03d}", workers), ns) for i in range(services)]
    )
    clusters: dict[str, str] = {}
    deadline = time.monotonic() + 300
    while len(clusters) < services:
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(clusters)} of {services} RayClusters were created")
        await asyncio.sleep(0.5)
        for cl in (await client.list(RAYCLUSTERS, ns))["items"]:
            clusters[cl["metadata"]["labels"][c.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY]] = cl["metadata"][
                "name"
            ]
    pods = []
    for i in range(services):
        cluster = clusters[f"svc-{i:03d}"]
        pods.append(pod(ns, cluster, f"{cluster}-head", "head", head_ip(i)))
        pods.extend(pod(ns, cluster, f"{cluster}-w{j}", "worker", "127.0.0.1") for j in range(workers))

    async def make(p: dict[str, Any]) -> None:
        ip = p.pop("_ip")
        created = await client.create(PODS, p, ns)
        created["status"] = {
            "phase": "Running",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "conditions": [{"type": "Ready", "status": "True"}],
        }
        await client.update_status(PODS, created)

    await bounded(48, [make(p) for p in pods])
    return clusters


async def wait_steady(client: Client, ns: str, services: int) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        items = (await client.list(RAYSERVICES, ns))["items"]
        done = sum(
            1
            for s in items
            if ((s.get("status") or {}).get("activeServiceStatus") or {}).get("rayClusterName")
            and not ((s.get("status") or {}).get("pendingServiceStatus") or {}).get("rayClusterName")
        )
        if done == services:
            return
        await asyncio.sleep(0.5)
    raise RuntimeError("RayServices did not all become active")


# -- measurement ----------------------------------------------------------------------------------


def counter_sum(name: str, **match: str) -> float:
    total = 0.0
    for metric in registry.collect():
        for sample in metric.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in match.items()):
                total += sample.value
    return total


class Operator:
    def __init__(self, config: Any, ns: str, *, arm: str, period: float) -> None:
        old = arm != "new"
        self.manager = Manager(
            config,
            ManagerOptions(metrics_bind_address="0", health_probe_bind_address="0", namespaces=[ns]),
        )
        self.rs = setup_rayservice(
            self.manager,
            checker=NoSharedChecker(period=period) if old else None,
            head_check_period=period,
            max_concurrent_reconciles=4,
            options=RayServiceOptions(serve_poll_interval=2.0, env={}),
        )
        if old:
            # KubeRay has no shared checker: every reconcile probes the Pods itself
            self.rs.reconciler.__class__ = Pre1808Reconciler if arm == "pre1808" else V170Reconciler
            self.rs.checker.set_targets(list)
        self.durations: list[tuple[str, float]] = []
        inner = self.rs.reconciler.reconcile

        async def timed(request: Request) -> Result:
            t0 = time.perf_counter()
            try:
                return await inner(request)
            finally:
                self.durations.append((request.name, time.perf_counter() - t0))

        self.rs.reconciler.reconcile = timed  # type: ignore[method-assign]
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.task = asyncio.create_task(self.manager.run(install_signal_handlers=False))

    async def stop(self) -> None:
        self.manager.stop()
        if self.task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.task, 30)
        if isinstance(self.rs.reconciler, Pre1808Reconciler) and self.rs.reconciler.session is not None:
            await self.rs.reconciler.session.close()


async def ray_counts(http: aiohttp.ClientSession) -> dict[str, int]:
    """What the fake Ray server has answered so far (proxy probes, Serve GETs and PUTs)."""
    async with http.get(f"http://127.0.0.1:{CTRL_PORT}/counts") as r:
        counts: dict[str, int] = await r.json()
        return counts


async def measure(op: Operator, window: float, http: aiohttp.ClientSession) -> dict[str, float]:
    r0, n0, a0, cpu0 = (
        await ray_counts(http),
        len(op.durations),
        counter_sum("rest_client_requests_total"),
        time.process_time(),
    )
    t0 = time.monotonic()
    await asyncio.sleep(window)
    dt = time.monotonic() - t0
    r1 = await ray_counts(http)
    return {
        "probes_per_s": (r1["healthz"] - r0["healthz"]) / dt,
        "serve_gets_per_s": (r1["serve_get"] - r0["serve_get"]) / dt,
        "reconciles_per_s": (len(op.durations) - n0) / dt,
        "api_requests_per_s": (counter_sum("rest_client_requests_total") - a0) / dt,
        "cpu_s": time.process_time() - cpu0,
        "window_s": dt,
    }


def p99(values: list[float]) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


async def touch_all(client: Client, ns: str, names: list[str], rate: float, tag: str) -> None:
    """Annotate every RayService once, ``rate`` per second: each annotation change is one reconcile."""
    for i, name in enumerate(names):
        patch = {"metadata": {"annotations": {"bench/touch": f"{tag}-{i}"}}}
        await client.patch(RAYSERVICES, name, patch, ns)
        await asyncio.sleep(1.0 / rate)


async def main(args: argparse.Namespace) -> dict[str, Any]:
    tmp = tempfile.mkdtemp(prefix="bench-operator-")
    kubeconfig = os.path.join(tmp, "kubeconfig")
    procs: list[asyncio.subprocess.Process] = []
    try:
        api = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "kuberay_py.envtest",
            "--kubeconfig-out",
            kubeconfig,
            "--crd",
            str(ROOT / "config/crd/bases"),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        procs.append(api)
        fake = await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "--serve-fake-ray",
            str(args.services),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        procs.append(fake)
        for p in (api, fake):
            assert p.stdout is not None
            if not await asyncio.wait_for(p.stdout.readline(), 120):
                raise RuntimeError("a helper process failed to start")
        for _ in range(600):
            if await asyncio.to_thread(os.path.exists, kubeconfig):
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.5)
        config = await load_config(kubeconfig)
        client = Client(config)
        http = aiohttp.ClientSession()
        results: dict[str, Any] = {arm: {} for arm in ARMS}
        for workers in args.workers:
            ns = f"bench-w{workers}"
            op = Operator(config, ns, arm="new", period=args.period)
            await op.start()
            t0 = time.monotonic()
            await create_workload(client, ns, args.services, workers)
            await wait_steady(client, ns, args.services)
            setup_s = time.monotonic() - t0
            await asyncio.sleep(args.settle)
            results["new"][workers] = {**await measure(op, args.window, http), "setup_s": setup_s}
            await op.stop()
            for arm in ARMS[1:]:
                kuberay = Operator(config, ns, arm=arm, period=args.period)
                await kuberay.start()
                await asyncio.sleep(args.settle)
                results[arm][workers] = await measure(kuberay, args.window, http)
                await kuberay.stop()
            print(json.dumps({"W": workers, **{arm: results[arm][workers] for arm in ARMS}}), flush=True)
        await http.close()

        # reconcile latency of the other RayServices, without and with 10 % hanging heads
        w = min(args.workers)
        ns = f"bench-w{w}"
        names = [f"svc-{i:03d}" for i in range(args.services)]
        hanging_names = set(names[::10])
        op = Operator(config, ns, arm="new", period=args.period)
        await op.start()
        await asyncio.sleep(args.settle)
        latency: dict[str, float] = {}
        async with aiohttp.ClientSession() as http:
            for phase in ("clean", "hanging"):
                hang = (
                    [head_ip(i) for i, n in enumerate(names) if n in hanging_names]
                    if phase == "hanging"
                    else []
                )
                async with http.post(f"http://127.0.0.1:{CTRL_PORT}/hang", json={"hang": hang}) as r:
                    await r.read()
                await asyncio.sleep(args.period + 2.5)  # a full round of checks (hanging ones time out)
                start = len(op.durations)
                await touch_all(client, ns, names, args.touch_rate, phase)
                await asyncio.sleep(1.0)
                others = [d for n, d in op.durations[start:] if n not in hanging_names]
                latency[phase] = p99(others)
        await op.stop()
        await client.close()

        w_max = max(args.workers)
        return {
            "services": args.services,
            "window_s": args.window,
            "check_period_s": args.period,
            "probes_per_s_by_workers": {
                str(k): round(v["probes_per_s"], 2) for k, v in results["new"].items()
            },
            **{
                f"{figure}_per_s": {
                    arm: {str(k): round(v[f"{figure}_per_s"], 2) for k, v in results[arm].items()}
                    for arm in ARMS
                }
                for figure in ("probes", "serve_gets", "reconciles", "api_requests")
            },
            "operator_cpu_s": {
                arm: {str(k): round(v["cpu_s"], 3) for k, v in results[arm].items()} for arm in ARMS
            },
            **{
                f"cpu_ratio_{arm}_vs_new_w{w_max}": round(
                    results[arm][w_max]["cpu_s"] / max(results["new"][w_max]["cpu_s"], 1e-3), 1
                )
                for arm in ARMS[1:]
            },
            "reconcile_p99_s": {k: round(v, 4) for k, v in latency.items()},
            "p99_ratio_hanging_vs_clean": round(latency["hanging"] / latency["clean"], 2),
            "hanging_heads": len(hanging_names),
        }
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                p.terminate()
        for p in procs:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(p.wait(), 10)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--serve-fake-ray":
        serve_fake_ray(int(sys.argv[2]))
        sys.exit(0)
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--services", type=int, default=200)
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 8, 32])
    parser.add_argument(
        "--window", type=float, default=10.0, help="steady-state window (s), a multiple of --period"
    )
    parser.add_argument("--settle", type=float, default=3.0)
    parser.add_argument("--period", type=float, default=5.0, help="head-proxy check period (s)")
    parser.add_argument("--touch-rate", type=float, default=50.0, help="annotation touches per second")
    figures = asyncio.run(main(parser.parse_args()))
    print(json.dumps(figures), flush=True)
