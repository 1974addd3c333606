"""KubeRay v1.7.0's own install, with only the image swapped: its Deployment's command and args run us.

The command and args come from the rendered manifests in ``tests/fixtures/kuberay/install/``
(Helm defaults, Helm ``singleNamespaceInstall``, kustomize ``config/default``, Helm with
``configuration.enabled``). Each is started as the image would start it: ``/manager`` (here a
link named ``manager`` to the ``kuberay-operator`` console script) with exactly the rendered args,
against envtest with the simulator. Only what a Pod would have and a test cannot is added: the
kubeconfig, ``POD_NAMESPACE`` (the Lease's namespace, which controller-runtime reads in a Pod from
the ServiceAccount mount), and free ports. The ports are appended as ``--metrics-addr`` and
``--health-probe-bind-address`` after the rendered args, relying on Go's rule that the last
occurrence of a flag wins; with ``--config`` the flags are ignored (as in KubeRay), so there the
ports go into the Configuration file instead and the appended flags must be reported as ignored.

Each case: the process becomes ready (``/readyz`` 200, and ``/metrics`` 200 as the chart's
probes ask), reconciles a fresh RayCluster and RayService to ready in its namespace, exports the
``kuberay_*`` metrics only if the args enable them, and exits 0 on SIGTERM.
"""

from __future__ import annotations

import asyncio
import json
import signal
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from controllers.api.crdgen import write_crds
from controllers.constants import RAYCLUSTERS, RAYSERVICES
from controllers.raysim import RayPodRuntime
from kuberay_py.client import Client, NotFound
from kuberay_py.client.resources import PODS
from kuberay_py.envtest import Environment
from tests.integration.cli.procs import OPERATOR, Proc, http_status
from tests.polling import eventually

ROOT = Path(__file__).resolve().parents[3]
INSTALL = ROOT / "tests" / "fixtures" / "kuberay" / "install"
SAMPLES = ROOT / "config" / "samples"
WAIT = 300.0  # a bound so a stuck start fails; not a performance assertion
PORTS = ["--metrics-addr", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0"]


def rendered(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((INSTALL / name).read_text()) if d]


def operator_argv(name: str) -> list[str]:
    """``command`` + ``args`` of the kuberay-operator container of the rendered Deployment."""
    deployment = next(d for d in rendered(name) if d["kind"] == "Deployment")
    [container] = [
        c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "kuberay-operator"
    ]
    return [*container["command"], *container.get("args", [])]


@dataclass
class Case:
    manifest: str
    namespace: str | None  # None: a fresh one (the install watches all namespaces)
    metrics: bool  # whether the rendered args (or config) enable the kuberay_* metrics


CASES = {
    "helm-defaults": Case("helm-chart-v1.7.0-default.yaml", None, True),
    "kustomize-default": Case("kustomize-config-default-v1.7.0.yaml", None, False),
    "helm-single-namespace": Case("helm-chart-v1.7.0-single-namespace.yaml", "ray-ns", True),
    "helm-configuration": Case("helm-chart-v1.7.0-configuration-enabled.yaml", None, True),
}


def test_the_fixtures_hold_kuberays_rendered_args() -> None:
    """What the cases run is what the chart and kustomize render (so the fixtures cannot drift)."""
    gates = (
        "--feature-gates=RayClusterStatusConditions=true,RayJobDeletionPolicy=true,RayMultiHostIndexing=true,"
        "RayServiceIncrementalUpgrade=true,RayCronJob=false,RayClusterMTLS=false,RayClusterNetworkPolicy=false,"
        "RayClusterHistoryServer=false"
    )
    helm = [
        "--log-stdout-encoder",
        "json",
        "--log-file-encoder",
        "json",
        "--enable-leader-election=true",
        "--enable-metrics=true",
        "--reconcile-concurrency=1",
        "--qps=100",
        "--burst=200",
        gates,
    ]
    assert operator_argv(CASES["helm-defaults"].manifest) == ["/manager", *helm]
    assert operator_argv(CASES["helm-single-namespace"].manifest) == [
        "/manager",
        "--watch-namespace",
        "ray-ns",
        *helm,
    ]
    assert operator_argv(CASES["kustomize-default"].manifest) == [
        "/manager",
        "--feature-gates=RayClusterStatusConditions=true",
    ]
    assert operator_argv(CASES["helm-configuration"].manifest) == [
        "/manager",
        "--config",
        "/etc/kuberay/config.yaml",
        gates,
    ]


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def cluster(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Environment]:
    crds = tmp_path_factory.mktemp("crds")
    write_crds(str(crds))
    async with Environment([str(crds)], simulate=True, pod_runtime=RayPodRuntime()) as env:
        yield env


def _sample(name: str) -> dict[str, Any]:
    return dict(yaml.safe_load((SAMPLES / name).read_text()))


async def _status(client: Client, res: Any, name: str, ns: str) -> dict[str, Any]:
    try:
        return dict((await client.get(res, name, ns)).get("status") or {})
    except NotFound:
        return {}


def _config_file(tmp_path: Path) -> Path:
    """The chart's ConfigMap content, plus the ports a test needs (the file replaces the flags)."""
    configmap = next(d for d in rendered(CASES["helm-configuration"].manifest) if d["kind"] == "ConfigMap")
    config = yaml.safe_load(configmap["data"]["config.yaml"])
    config.update(metricsAddr="127.0.0.1:0", probeAddr="127.0.0.1:0")
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _scrape(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return str(resp.read().decode())


@pytest.mark.parametrize("case_id", list(CASES))
async def test_kuberays_rendered_args_run_the_operator(
    case_id: str, cluster: Environment, tmp_path: Path
) -> None:
    case = CASES[case_id]
    argv = operator_argv(case.manifest)
    assert argv[0] == "/manager"
    args = argv[1:]
    if "--config" in args:
        args[args.index("--config") + 1] = str(_config_file(tmp_path))
    if case.namespace is None:
        ns = await cluster.create_namespace(generate_name=f"{case_id}-")
    else:
        ns = await cluster.create_namespace(case.namespace)
    manager = tmp_path / "manager"
    manager.symlink_to(OPERATOR)  # the image's /manager is a link to the console script
    async with cluster.new_client() as client:
        await client.create(RAYCLUSTERS, _sample("ray-cluster.sample.yaml"), ns)
        await client.create(RAYSERVICES, _sample("ray-service.sample.yaml"), ns)
        outside = None
        if case.namespace is not None:  # a single-namespace install leaves other namespaces alone
            outside = await cluster.create_namespace(generate_name="not-watched-")
            await client.create(RAYCLUSTERS, _sample("ray-cluster.sample.yaml"), outside)

        op = Proc(
            *args,
            "--kubeconfig",
            cluster.kubeconfig_path,
            *PORTS,
            program=manager,
            env={"POD_NAMESPACE": ns},
        )
        try:
            serving = await asyncio.to_thread(op.json_log, "serving", server="health", timeout=WAIT)
            metrics = await asyncio.to_thread(op.json_log, "serving", server="metrics", timeout=WAIT)

            async def ready() -> bool:
                return await asyncio.to_thread(http_status, f"{serving['url']}/readyz") == 200

            await eventually(ready, "/readyz 200", WAIT)
            assert (
                await asyncio.to_thread(http_status, f"{metrics['url']}/metrics") == 200
            )  # the chart's probes

            async def reconciled() -> bool:
                rc = await _status(client, RAYCLUSTERS, "raycluster-kuberay", ns)
                svc = await _status(client, RAYSERVICES, "rayservice-sample", ns)
                conditions = {c["type"]: c["status"] for c in svc.get("conditions") or []}
                return rc.get("state") == "ready" and conditions.get("Ready") == "True"

            await eventually(reconciled, "the RayCluster and the RayService ready", WAIT)
            exported = await asyncio.to_thread(_scrape, f"{metrics['url']}/metrics")
            assert ("kuberay_cluster_info{" in exported) is case.metrics, case
            assert "controller_runtime_reconcile_total" in exported

            if "--config" in args:
                heads = (await client.list(PODS, ns, label_selector="ray.io/node-type=head"))["items"]
                assert heads and all(p["metadata"]["labels"].get("team") == "ml" for p in heads)
                assert all(p["metadata"]["annotations"]["prometheus.io/scrape"] == "true" for p in heads)
                env = heads[0]["spec"]["containers"][0]["env"]
                assert {"name": "RAY_enable_open_telemetry", "value": "true"} in env
                ignored = await asyncio.to_thread(
                    op.json_log, "operator.flag_ignored_with_config", flag="metrics-addr", timeout=10
                )
                assert ignored["level"] == "warning"
            if outside is not None:
                assert await _status(client, RAYCLUSTERS, "raycluster-kuberay", outside) == {}
                assert (await client.list(PODS, outside))["items"] == []

            op.signal(signal.SIGTERM)
            assert await asyncio.to_thread(op.wait, 60) == 0, str(op)
        finally:
            op.kill()
    gates = await asyncio.to_thread(op.json_log, "operator.feature_gates", timeout=5)
    assert gates["feature_gates"]["RayClusterStatusConditions"] is True
    assert not [line for line in op.stderr if "Traceback" in line], str(op)
    # Every line on the stream is JSON, as --log-stdout-encoder json (the default) asks.
    assert all(json.loads(line) for line in op.stderr if line.strip()), str(op)
