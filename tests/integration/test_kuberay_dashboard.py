"""KubeRay v1.7.0's own operator dashboard, unchanged, on kuberay-py's metrics.

``tests/fixtures/kuberay/grafana/KubeRay-Operator.json`` is KubeRay's dashboard byte for byte. A
real Prometheus scrapes the demo operator as the shipped ServiceMonitor would; the demo's
RayCluster, RayService and RayJob become ready, then objects in the states KubeRay's "problem"
tables list are added: a RayCluster whose head never turns Ready (RayClusterProvisioned false), a
RayService on such a cluster (Ready false), an upgrade of the demo's RayService to such a cluster
(UpgradeInProgress true) and a suspended RayJob. Every panel query, with its template variables
filled in as Grafana does, must then return data; a panel without is named in the failure.

One panel ("HeadPodReady (false)") reads kube-state-metrics, a component a KubeRay user runs next
to the operator: :class:`KubeStateMetrics` serves its two families for the demo's Pods. That panel
matches head Pods named ``<cluster>-head``, so the operator runs with KubeRay's
``ENABLE_DETERMINISTIC_HEAD_POD_NAME=true``.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.cli.procs import LOOPBACK, Proc, kube_create, kube_get, kube_patch
from tests.prometheus_harness import (
    Prometheus,
    dashboard_targets,
    has_data,
    operator_job,
    panel_data,
    resolve_variables,
    running_prometheus,
    service_monitor_scrape_config,
    wait_for_scrapes,
)
from tests.promql import selectors

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "tests" / "fixtures" / "kuberay" / "grafana" / "KubeRay-Operator.json"
SAMPLES = ROOT / "config" / "samples"
OPERATOR_POD = "kuberay-operator-5d8f7c9b4-x2x7q"
RAY_API = "/apis/ray.io/v1/namespaces/default"
NEVER_READY = {"exec": {"command": ["false"]}, "periodSeconds": 1, "failureThreshold": 1}

pytestmark = [
    pytest.mark.prometheus,
    pytest.mark.skipif(
        shutil.which("prometheus") is None,
        reason="prometheus not on PATH (Debian package 'prometheus'; .ci/run installs it)",
    ),
]


def dashboard() -> dict[str, Any]:
    return dict(json.loads(DASHBOARD.read_text()))


def targets() -> list[tuple[str, dict[str, Any]]]:
    return dashboard_targets(dashboard())


def _target_id(title: str, target: dict[str, Any]) -> str:
    return f"{title} [{target.get('refId', '?')}]"


def series_read(expr: str) -> set[str]:
    """The metric names a panel query reads (Grafana's interval built-ins stand in range selectors,
    where the parser takes no variable)."""
    return {s.name for s in selectors(re.sub(r"\$__\w+", "5m", expr))}


class KubeStateMetrics:
    """kube-state-metrics' ``kube_pod_info`` and ``kube_pod_status_ready`` for the demo's Pods.

    Read from the API server at each scrape, with kube-state-metrics v2's labels: ``created_by_*``
    from the Pod's controller owner reference (``<none>`` without one), and one ready series per
    condition value with 1 on the Pod's ``Ready`` condition status (true/false/unknown).
    """

    def __init__(self, kubeconfig: Path) -> None:
        kubeconfig_path = kubeconfig

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = KubeStateMetrics.exposition(kube_get(kubeconfig_path, "/api/v1/pods")["items"])
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.target = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @staticmethod
    def exposition(pods: list[dict[str, Any]]) -> str:
        lines = ["# TYPE kube_pod_info gauge", "# TYPE kube_pod_status_ready gauge"]
        for pod in pods:
            meta, status = pod["metadata"], pod.get("status") or {}
            owner = next((r for r in meta.get("ownerReferences") or [] if r.get("controller")), {})
            ids = f'namespace="{meta["namespace"]}",pod="{meta["name"]}",uid="{meta["uid"]}"'
            kind, name = owner.get("kind", "<none>"), owner.get("name", "<none>")
            info = (
                f'created_by_kind="{kind}",created_by_name="{name}",'
                f'host_ip="{status.get("hostIP", "")}",pod_ip="{status.get("podIP", "")}",'
                f'node="{(pod.get("spec") or {}).get("nodeName", "")}"'
            )
            lines.append(f"kube_pod_info{{{ids},{info}}} 1")
            ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {})
            for value in ("true", "false", "unknown"):
                on = str(ready.get("status", "Unknown")).lower() == value
                lines.append(f'kube_pod_status_ready{{{ids},condition="{value}"}} {int(on)}')
        return "\n".join(lines) + "\n"

    def scrape_config(self) -> dict[str, Any]:
        # As kube-prometheus-stack scrapes it: honor_labels, so namespace/pod are the Pods'.
        return {
            "job_name": "kube-state-metrics",
            "honor_labels": True,
            "static_configs": [{"targets": [self.target]}],
        }

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _sample(name: str, kind: str) -> dict[str, Any]:
    [doc] = [d for d in yaml.safe_load_all((SAMPLES / name).read_text()) if d and d["kind"] == kind]
    return dict(doc)


def _never_ready_head(cluster_spec: dict[str, Any]) -> None:
    cluster_spec["headGroupSpec"]["template"]["spec"]["containers"][0]["readinessProbe"] = NEVER_READY


def troubled_objects() -> list[tuple[str, dict[str, Any]]]:
    cluster = copy.deepcopy(_sample("ray-cluster.sample.yaml", "RayCluster"))
    cluster["metadata"] = {"name": "raycluster-unready"}
    _never_ready_head(cluster["spec"])
    for group in cluster["spec"]["workerGroupSpecs"]:
        group["replicas"] = group["minReplicas"] = 0
    service = copy.deepcopy(_sample("ray-service.sample.yaml", "RayService"))
    service["metadata"] = {"name": "rayservice-unready"}
    _never_ready_head(service["spec"]["rayClusterConfig"])
    job = copy.deepcopy(_sample("ray-job.sample.yaml", "RayJob"))
    job["metadata"] = {"name": "rayjob-suspended"}
    # KubeRay only lets a RayJob that deletes its cluster when done be suspended (else ValidationFailed).
    job["spec"]["suspend"] = job["spec"]["shutdownAfterJobFinishes"] = True
    return [("rayclusters", cluster), ("rayservices", service), ("rayjobs", job)]


@pytest.fixture(scope="module")
def panel_answers(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, tuple[str, dict[str, Any]]]]:
    """Target id -> (the query as run, Prometheus' answer), once every panel had data or the deadline."""
    tmp = tmp_path_factory.mktemp("kuberay-dashboard")
    kubeconfig = tmp / "kubeconfig"
    # KubeRay's HeadPodReady panel matches head Pods named <cluster>-head: KubeRay's option for that.
    env = {"ENABLE_DETERMINISTIC_HEAD_POD_NAME": "true"}
    demo = Proc("demo", *LOOPBACK, "--kubeconfig-out", str(kubeconfig), env=env)
    ksm: KubeStateMetrics | None = None
    try:
        line = demo.wait_for(lambda s: s.startswith("operator running; metrics: "), timeout=120)
        target = line.rsplit("http://", 1)[1]
        ksm = KubeStateMetrics(kubeconfig)
        scrapes = [service_monitor_scrape_config(target, pod=OPERATOR_POD), ksm.scrape_config()]
        with running_prometheus(tmp, scrapes, with_rules=False) as api:
            demo.wait_for(lambda s: s == "all objects are ready", timeout=240)
            for plural, obj in troubled_objects():
                kube_create(kubeconfig, f"{RAY_API}/{plural}", obj)
            # The demo's RayService upgrades to a cluster whose head never turns Ready.
            head = "/spec/rayClusterConfig/headGroupSpec/template/spec/containers/0/readinessProbe"
            patch = [{"op": "add", "path": head, "value": NEVER_READY}]
            kube_patch(kubeconfig, f"{RAY_API}/rayservices/rayservice-sample", patch)
            wait_for_scrapes(api, operator_job()[0])
            wait_for_scrapes(api, "kube-state-metrics")
            yield _poll_panels(api)
    finally:
        if ksm is not None:
            ksm.close()
        demo.signal(2)
        try:
            demo.wait(60)
        finally:
            demo.kill()


def _poll_panels(api: Prometheus, timeout: float = 180) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every target's query and answer, re-run until all the operator's panels have data."""
    board = dashboard()
    deadline = time.monotonic() + timeout
    while True:
        variables = resolve_variables(board, api)  # as Grafana's refresh: the options may change
        answers, waiting = {}, []
        for title, target in dashboard_targets(board):
            query = variables.interpolate(target["expr"])
            answer = panel_data(api, query, target, board)
            answers[_target_id(title, target)] = (query, answer)
            if not has_data(answer):
                waiting.append(title)
        if not waiting or time.monotonic() > deadline:
            return answers
        time.sleep(0.5)  # between polls of Prometheus' answers, not instead of an event


@pytest.mark.parametrize(("title", "target"), targets(), ids=[_target_id(t, x) for t, x in targets()])
def test_every_kuberay_panel_shows_data(
    panel_answers: dict[str, tuple[str, dict[str, Any]]], title: str, target: dict[str, Any]
) -> None:
    query, answer = panel_answers[_target_id(title, target)]
    assert answer["status"] == "success", f"panel {title!r}: {query}: {answer.get('error')}"
    assert has_data(answer), f"panel {title!r} of KubeRay's dashboard shows no data: {query}"


def test_the_panels_read_the_operators_series_and_two_of_kube_state_metrics() -> None:
    read = {n for _, t in targets() for n in series_read(t["expr"])}
    assert read == {
        "workqueue_depth",
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_time_seconds_bucket",
        "kuberay_cluster_info",
        "kuberay_cluster_provisioned_duration_seconds",
        "kuberay_cluster_condition_provisioned",
        "kuberay_service_info",
        "kuberay_service_condition_ready",
        "kuberay_service_condition_upgrade_in_progress",
        "kuberay_job_info",
        "kuberay_job_execution_duration_seconds",
        "kuberay_job_deployment_status",
        # kube-state-metrics' (KubeStateMetrics above), only in "HeadPodReady (false)"
        "kube_pod_status_ready",
        "kube_pod_info",
    }


def test_the_fixture_is_kuberays_dashboard_unchanged() -> None:
    import hashlib

    digest = hashlib.sha256(DASHBOARD.read_bytes()).hexdigest()
    assert digest == "76abe7b3673533eaae41158778d5b2e1fffc5619e179b51c11331f4832271c5e"
