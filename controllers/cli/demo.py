"""``kuberay-operator demo``: the operator's main job on an embedded control plane.

It starts the built-in API server with the cluster simulator and fake Ray nodes, installs the CRDs
generated from the models, applies the samples (or ``-f`` files), runs the same operator a cluster
runs, and prints each object's state whenever it changes. ``--no-operator`` leaves the operator
out, so one started with ``kuberay-operator run --kubeconfig PATH`` can be stopped, killed and
restarted against a cluster that keeps running.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

import anyio
import yaml

from controllers.api.crdgen import write_crds
from controllers.constants import RAYCLUSTERS, RAYJOBS, RAYSERVICES
from controllers.raysim import RayPodRuntime
from kuberay_py import log
from kuberay_py.client import AlreadyExists, ApiError, Client, Resource, resources
from kuberay_py.envtest import Environment
from kuberay_py.envtest.sim.podnetwork import PodNetworkUnavailable
from kuberay_py.manager import Manager

from .flags import DEMO_HEALTH_ADDR, DEMO_METRICS_ADDR, OperatorFlags
from .operator import build_manager
from .progress import is_ready, summary

__all__ = ["load_manifests", "run_demo"]

SAMPLES_DIR = Path(__file__).resolve().parents[2] / "config" / "samples"
DEFAULT_SAMPLES = ("ray-cluster.sample.yaml", "ray-service.sample.yaml", "ray-job.sample.yaml")
KINDS: dict[tuple[str, str], Resource] = {
    ("ray.io/v1", "RayCluster"): RAYCLUSTERS,
    ("ray.io/v1", "RayService"): RAYSERVICES,
    ("ray.io/v1", "RayJob"): RAYJOBS,
    ("v1", "ConfigMap"): resources.CONFIGMAPS,
    ("v1", "Secret"): resources.SECRETS,
    ("v1", "Service"): resources.SERVICES,
    ("v1", "Namespace"): resources.NAMESPACES,
}
POLL_SECONDS = 0.5
DEMO_NAMESPACE = "default"


class DemoError(Exception):
    """A problem with the demo's input; printed as one line, exit code 1."""


def load_manifests(paths: list[Path]) -> list[dict[str, Any]]:
    """Every YAML document in ``paths``; empty files and empty documents contribute nothing."""
    objects: list[dict[str, Any]] = []
    for path in paths:
        try:
            docs = list(yaml.safe_load_all(path.read_text()))
        except OSError as err:
            raise DemoError(f"cannot read {path}: {err.strerror}") from err
        except yaml.YAMLError as err:
            raise DemoError(f"{path} is not valid YAML: {err}") from err
        for doc in docs:
            if doc is None:
                continue
            if not isinstance(doc, dict) or "kind" not in doc or "apiVersion" not in doc:
                raise DemoError(f"{path}: every document needs apiVersion and kind")
            if (doc["apiVersion"], doc["kind"]) not in KINDS:
                supported = ", ".join(f"{k} ({v})" for v, k in KINDS)
                kind = f"{doc['kind']} ({doc['apiVersion']})"
                raise DemoError(f"{path}: unsupported kind {kind}; use {supported}")
            objects.append(doc)
    return objects


def _port_is_free(address: str) -> bool:
    host, _, port = address.rpartition(":")
    with socket.socket() as probe:
        try:
            probe.bind((host or "0.0.0.0", int(port)))
        except OSError:
            return False
    return True


def _free_default_ports(flags: OperatorFlags, out: TextIO) -> OperatorFlags:
    """The demo's default ports, or free ones when something (another demo) already uses them.

    Only the defaults move: an address given on the command line is used as is, and a clash on it
    is reported as an error.
    """
    metrics, health = flags.metrics_addr, flags.health_probe_bind_address
    if metrics == DEMO_METRICS_ADDR and not _port_is_free(metrics):
        out.write(f"{metrics} is in use; metrics on a free port instead\n")
        metrics = "127.0.0.1:0"
    if health == DEMO_HEALTH_ADDR and not _port_is_free(health):
        out.write(f"{health} is in use; health probes on a free port instead\n")
        health = "127.0.0.1:0"
    return dataclasses.replace(flags, metrics_addr=metrics, health_probe_bind_address=health)


def _check_writable(path: Path) -> None:
    """Fail before anything starts, not with a traceback once the API server is up."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a"):
            pass
    except OSError as err:
        raise DemoError(f"cannot write the kubeconfig to {path}: {err.strerror}") from err


async def _ensure_namespace(client: Client, namespace: str) -> None:
    with contextlib.suppress(AlreadyExists):
        await client.create(resources.NAMESPACES, {"metadata": {"name": namespace}})


async def _apply(client: Client, obj: dict[str, Any]) -> tuple[Resource, str, str]:
    res = KINDS[(obj["apiVersion"], obj["kind"])]
    meta = obj.setdefault("metadata", {})
    namespace = meta.get("namespace") or DEMO_NAMESPACE if res.namespaced else ""
    if res.namespaced:
        meta["namespace"] = namespace
        await _ensure_namespace(client, namespace)
    try:
        created = await client.create(res, obj, namespace or None)
    except AlreadyExists:
        created = await client.get(res, meta["name"], namespace or None)
    except ApiError as err:
        raise DemoError(f"{obj['kind']}/{meta.get('name')}: {err}") from err
    return res, namespace, created["metadata"]["name"]


async def _serve_endpoint(client: Client, namespace: str, service: str) -> str | None:
    slices = await client.list(
        resources.ENDPOINTSLICES, namespace, label_selector=f"kubernetes.io/service-name={service}"
    )
    for item in slices.get("items", []):
        ports = item.get("ports") or []
        for endpoint in item.get("endpoints") or []:
            if (endpoint.get("conditions") or {}).get("ready") and endpoint.get("addresses") and ports:
                return f"http://{endpoint['addresses'][0]}:{ports[0].get('port')}/"
    return None


class _Progress:
    """Prints a line per object whenever its summary changes."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.last: dict[tuple[str, str, str], str] = {}

    def show(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        key = (obj.get("kind", ""), meta.get("namespace", ""), meta.get("name", ""))
        line = summary(obj)
        if self.last.get(key) != line:
            self.last[key] = line
            self.out.write(f"  {line}\n")
            self.out.flush()


async def _snapshot(client: Client, applied: list[tuple[Resource, str, str]]) -> list[dict[str, Any]]:
    objs = []
    for res, namespace, name in applied:
        obj = await client.get(res, name, namespace or None)
        obj.setdefault("kind", res.kind)
        objs.append(obj)
    return objs


async def _report_endpoints(client: Client, objs: list[dict[str, Any]], out: TextIO) -> None:
    for obj in objs:
        if obj.get("kind") != "RayService":
            continue
        meta = obj["metadata"]
        service = ((obj.get("spec") or {}).get("serveService") or {}).get("metadata", {}).get("name")
        service = service or f"{meta['name']}-serve-svc"
        endpoint = await _serve_endpoint(client, meta["namespace"], service)
        out.write(f"serve endpoint ({meta['namespace']}/{service}): {endpoint or 'none ready yet'}\n")


async def _watch_until(
    client: Client,
    applied: list[tuple[Resource, str, str]],
    progress: _Progress,
    *,
    until_ready: bool,
    timeout: float,
    out: TextIO,
) -> int:
    deadline = anyio.current_time() + timeout
    announced = False
    while True:
        objs = await _snapshot(client, applied)
        for obj in objs:
            progress.show(obj)
        ready = all(is_ready(obj) for obj in objs)
        if ready and not announced:
            announced = True
            out.write("all objects are ready\n")
            await _report_endpoints(client, objs, out)
            out.flush()
            if until_ready:
                return 0
        if until_ready and anyio.current_time() >= deadline:
            waiting = [summary(obj) for obj in objs if not is_ready(obj)]
            sys.stderr.write(f"kuberay-operator demo: not ready after {timeout:g}s: {'; '.join(waiting)}\n")
            return 1
        await anyio.sleep(POLL_SECONDS)


async def run_demo(
    flags: OperatorFlags,
    *,
    files: list[str] | None,
    until_ready: bool,
    timeout: float,
    kubeconfig_out: str | None,
    no_operator: bool,
    out: TextIO = sys.stdout,
) -> int:
    log.configure(flags.log_format, flags.log_level)  # stderr, resolved at write time
    try:
        if files is None and not SAMPLES_DIR.is_dir():
            # A wheel/image install has the code but not the repository's config/ directory.
            raise DemoError(
                f"the samples ({SAMPLES_DIR}) come with a source checkout, not the installed "
                "package; pass -f FILE (repeatable) to apply your own manifests"
            )
        paths = [Path(f) for f in files] if files is not None else [SAMPLES_DIR / s for s in DEFAULT_SAMPLES]
        manifests = load_manifests(paths)
        if kubeconfig_out:
            _check_writable(Path(kubeconfig_out))
    except DemoError as err:
        sys.stderr.write(f"kuberay-operator demo: {err}\n")
        return 1
    with tempfile.TemporaryDirectory(prefix="kuberay-demo-crds-") as crd_dir:
        write_crds(crd_dir)
        env = Environment(
            [crd_dir], simulate=True, pod_runtime=RayPodRuntime(), kubeconfig_out=kubeconfig_out
        )
        try:
            await env.start()
        except PodNetworkUnavailable as err:
            sys.stderr.write(f"kuberay-operator demo: {err}\n")
            return 1
        try:
            async with env.new_client() as client:
                out.write(f"API server ready; kubeconfig: {env.kubeconfig_path}\n")
                kubectl = f"kubectl --kubeconfig {env.kubeconfig_path}"
                out.write(f"  try: {kubectl} get rayclusters,rayservices -A\n")
                try:
                    applied = [await _apply(client, obj) for obj in manifests]
                except DemoError as err:
                    sys.stderr.write(f"kuberay-operator demo: {err}\n")
                    return 1
                out.write(f"applied {len(applied)} object(s)\n")
                return await _run_with_operator(
                    env,
                    client,
                    applied,
                    flags,
                    no_operator=no_operator,
                    until_ready=until_ready,
                    timeout=timeout,
                    out=out,
                )
        finally:
            await env.stop()


async def _run_with_operator(
    env: Environment,
    client: Client,
    applied: list[tuple[Resource, str, str]],
    flags: OperatorFlags,
    *,
    no_operator: bool,
    until_ready: bool,
    timeout: float,
    out: TextIO,
) -> int:
    progress = _Progress(out)
    result = 0
    manager: Manager | None = None
    manager_done = anyio.Event()
    finishing = False
    async with anyio.create_task_group() as tg:

        async def finish() -> None:
            # Drain the operator (reconciles in flight finish, its client closes) before the
            # embedded API server goes away, instead of cancelling it mid-request.
            nonlocal finishing
            finishing = True
            if manager is not None:
                manager.stop()
                with anyio.move_on_after(flags.graceful_shutdown_timeout + 5):
                    await manager_done.wait()
            tg.cancel_scope.cancel()

        if not no_operator:
            # Leader election on, in the embedded cluster's default namespace, as a Deployment runs
            # it: the demo exports the same leader_election_* series the dashboard and alerts read.
            # No admission webhooks: the embedded cluster installs no webhook configuration and has no
            # serving certificate, so an ENABLE_WEBHOOKS=true left in the shell must not stop the demo.
            flags = dataclasses.replace(
                flags, leader_election_namespace=DEMO_NAMESPACE, enable_webhooks=False
            )
            flags = _free_default_ports(flags, out)
            manager = build_manager(env.client_config, flags, leader_election=True)

            async def operate() -> None:
                nonlocal result
                assert manager is not None
                problem = "the operator stopped unexpectedly"
                try:
                    await manager.run(install_signal_handlers=False)
                except OSError as err:  # a metrics/probe port in use (another demo?)
                    problem = f"{err}; pick free ports, e.g. --metrics-addr 127.0.0.1:0 "
                    problem += "--health-probe-bind-address 127.0.0.1:0"
                except Exception as err:
                    problem = f"the operator failed: {err}"
                finally:
                    manager_done.set()
                # The operator stopped on its own: the demo cannot continue.
                if not finishing:
                    sys.stderr.write(f"kuberay-operator demo: {problem}\n")
                    result = 1
                    tg.cancel_scope.cancel()

            tg.start_soon(operate)
            await manager.elected.wait()  # a failed start-up cancels this through operate()
            out.write(f"operator running; metrics: {manager.metrics_url or 'disabled'}\n")
            out.write(f"operator health probes: {manager.health_url or 'disabled'}\n")
        else:
            out.write("embedded cluster only (--no-operator); run the operator with:\n")
            out.write(f"  kuberay-operator run --kubeconfig {env.kubeconfig_path} ")
            out.write("--enable-leader-election=false\n")
        out.flush()

        async def watch() -> None:
            nonlocal result
            # Without an operator nothing becomes ready by itself; keep serving until interrupted.
            result = await _watch_until(
                client,
                applied,
                progress,
                until_ready=until_ready and not no_operator,
                timeout=timeout,
                out=out,
            )
            await finish()

        async def signals() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
                async for _ in received:
                    out.write("stopping\n")
                    out.flush()
                    await finish()
                    return

        tg.start_soon(watch)
        tg.start_soon(signals)
    return result
