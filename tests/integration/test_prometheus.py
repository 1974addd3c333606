"""A real Prometheus scrapes the demo operator as the shipped ServiceMonitor would (target labels,
honor_labels) and evaluates the shipped rules; every dashboard and alert query runs against it.

Twice: the demo itself (leader election on, as a Deployment runs it) and ``demo --no-operator``
with ``run --enable-leader-election=false``, where no replica exports leader_election_* at all.
Debian's ``prometheus`` package (installed by ``.ci/run``) provides ``prometheus`` and ``promtool``.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.cli.procs import LOOPBACK, Proc
from tests.prometheus_harness import (
    Prometheus,
    alert_rules,
    dashboard_targets,
    has_data,
    operator_job,
    panel_data,
    resolve_variables,
    rule_groups,
    running_prometheus,
    service_monitor_scrape_config,
    wait_for_operator_to_report_ready,
    wait_for_rules_to_see_now,
    wait_for_scrapes,
)
from tests.promql import selectors

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "config" / "grafana" / "kuberay-operator-dashboard.json"
# A Pod name as the Deployment's ReplicaSet would give it (the ServiceMonitor's `pod` label).
OPERATOR_POD = "kuberay-operator-5d8f7c9b4-x2x7q"

pytestmark = [
    pytest.mark.prometheus,
    pytest.mark.skipif(
        not (shutil.which("prometheus") and shutil.which("promtool")),
        reason="prometheus/promtool not on PATH (Debian package 'prometheus'; .ci/run installs it)",
    ),
]


def dashboard() -> dict[str, Any]:
    return dict(json.loads(DASHBOARD.read_text()))


def panel_queries() -> list[tuple[str, str]]:
    """(panel title, PromQL with Grafana's variables left in) for every target of every panel."""
    return [(title, target["expr"]) for title, target in dashboard_targets(dashboard())]


@contextlib.contextmanager
def scraping(tmp: Path, target: str, demo: Proc) -> Iterator[Prometheus]:
    """Prometheus scraping the operator at ``target`` from the start (so the reconciles that make
    the demo's samples ready fall inside the panels' rate windows; the samples' readiness gives the
    Serve series values to show), once the operator's series and the rules have caught up."""
    with running_prometheus(tmp, [service_monitor_scrape_config(target, pod=OPERATOR_POD)]) as api:
        demo.wait_for(lambda s: s == "all objects are ready", timeout=240)
        wait_for_scrapes(api, operator_job()[0])
        wait_for_operator_to_report_ready(api)
        wait_for_rules_to_see_now(api, operator_job()[0])
        yield api


@pytest.fixture(scope="module")
def scraped_demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    tmp = tmp_path_factory.mktemp("prometheus")
    demo = Proc("demo", *LOOPBACK)
    try:
        line = demo.wait_for(lambda s: s.startswith("operator running; metrics: "), timeout=120)
        target = line.rsplit("http://", 1)[1]
        with scraping(tmp, target, demo) as api:
            yield api
    finally:
        demo.signal(2)
        try:
            demo.wait(60)
        finally:
            demo.kill()


@pytest.fixture(scope="module")
def scraped_without_leader_election(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    tmp = tmp_path_factory.mktemp("prometheus-no-election")
    kubeconfig = tmp / "kubeconfig"
    demo = Proc("demo", "--no-operator", "--kubeconfig-out", str(kubeconfig))
    op: Proc | None = None
    try:
        demo.wait_for(lambda s: s.startswith("embedded cluster only (--no-operator)"), timeout=120)
        # --enable-metrics: the kuberay_* series are opt-in, as in KubeRay (the shipped Deployment sets it).
        election_off = "--enable-leader-election=false"
        op = Proc("run", "--kubeconfig", str(kubeconfig), *LOOPBACK, election_off, "--enable-metrics")
        target = op.json_log("serving", server="metrics", timeout=120)["url"].split("://", 1)[1]
        with scraping(tmp, target, demo) as api:
            yield api
    finally:
        if op is not None:
            op.signal(2)
            try:
                op.wait(60)
            finally:
                op.kill()
        demo.kill()


@pytest.mark.parametrize(("title", "expr"), panel_queries(), ids=[t for t, _ in panel_queries()])
def test_every_dashboard_query_returns_data(scraped_demo: Prometheus, title: str, expr: str) -> None:
    board = dashboard()
    variables = resolve_variables(board, scraped_demo)
    [target] = [t for name, t in dashboard_targets(board) if name == title and t["expr"] == expr][:1]
    query = variables.interpolate(expr)
    answer = panel_data(scraped_demo, query, target, board)
    assert answer["status"] == "success", f"{title}: {query}: {answer.get('error')}"
    assert has_data(answer), f"panel {title!r} shows no data: {query}"


def test_dashboard_variables_select_the_shipped_install(scraped_demo: Prometheus) -> None:
    # The job/namespace variables list the operator's scrape job and namespace, and their saved
    # values are the shipped install's, so the dashboard opens on it without a choice.
    board = dashboard()
    variables = resolve_variables(board, scraped_demo)
    job, namespace = operator_job()
    assert variables.options["job"] == [job]
    assert variables.options["namespace"] == [namespace]
    saved = {v["name"]: v["current"]["value"] for v in board["templating"]["list"] if v["type"] == "query"}
    assert saved == {"job": job, "namespace": namespace}


@pytest.mark.parametrize("rule", alert_rules(), ids=lambda r: r["alert"])
def test_every_alert_expression_parses(scraped_demo: Prometheus, rule: dict[str, Any]) -> None:
    answer = scraped_demo.query(rule["expr"])
    assert answer["status"] == "success", f"{rule['alert']}: {answer.get('error')}"


def _not_inactive(api: Prometheus) -> dict[str, Any]:
    rules = api.alerting_rules()
    assert {r["name"] for r in rules} == {r["alert"] for r in alert_rules()}
    return {
        r["name"]: (r["state"], r["health"], r.get("lastError"))
        for r in rules
        if r["state"] != "inactive" or r["health"] != "ok"
    }


def test_healthy_demo_has_no_pending_or_firing_alert(scraped_demo: Prometheus) -> None:
    # Everything in the demo is healthy and leading: no alert condition holds (a pending alert is
    # one whose expression holds, waiting out its `for`), and the rules' scope sees the operator.
    assert _not_inactive(scraped_demo) == {}
    job, _ = operator_job()
    assert scraped_demo.value("max(kuberay_operator:up)") == 1
    assert scraped_demo.value(f'max(leader_election_master_status{{job="{job}"}})') == 1


def test_leader_election_off_has_no_pending_or_firing_alert(
    scraped_without_leader_election: Prometheus,
) -> None:
    api = scraped_without_leader_election
    job, _ = operator_job()
    assert api.query(f'leader_election_master_status{{job="{job}"}}')["data"]["result"] == []
    assert api.value("max(kuberay_operator:up)") == 1
    assert _not_inactive(api) == {}


def test_demo_exports_the_metrics_the_dashboard_names(scraped_demo: Prometheus) -> None:
    for name in (
        "kuberay_head_proxy_healthy",
        "kuberay_serve_endpoints",
        "kuberay_cluster_info",
        "kuberay_service_condition_ready",
        "kuberay_job_info",
        "kuberay_job_execution_duration_seconds",
        "leader_election_master_status",
    ):
        assert scraped_demo.query(name)["data"]["result"], name
    assert scraped_demo.value("min(kuberay_head_proxy_healthy)") == 1


def test_object_series_keep_their_own_namespace(scraped_demo: Prometheus) -> None:
    # honorLabels: the demo's objects live in `default`; the operator's own series get the
    # target's namespace. Without it the objects' namespace would move to exported_namespace.
    _, namespace = operator_job()
    assert scraped_demo.label_values("namespace", "kuberay_cluster_info", seconds=600) == ["default"]
    assert scraped_demo.label_values("namespace", "controller_runtime_active_workers", seconds=600) == [
        namespace
    ]
    assert scraped_demo.label_values("exported_namespace", None, seconds=600) == []


def test_promtool_check_rules_passes(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": rule_groups()}))
    done = subprocess.run(
        ["promtool", "check", "rules", str(rules)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {sum(len(g['rules']) for g in rule_groups())} rules found" in done.stdout


def test_promtool_rejects_a_broken_rule(tmp_path: Path) -> None:
    # The check above can fail: a syntax error is caught.
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": [{"name": "g", "rules": [{"alert": "A", "expr": "sum(("}]}]}))
    done = subprocess.run(
        ["promtool", "check", "rules", str(rules)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0


def test_every_metric_a_query_names_is_exported(scraped_demo: Prometheus) -> None:
    # A misspelt name still parses, and `... or vector(0)` or an alert would just stay silent:
    # so each name read by a panel or an alert must be one the operator really exports (or the
    # rules record).
    exported = scraped_demo.metric_names()
    exprs = [e for _, e in panel_queries()] + [r["expr"] for g in rule_groups() for r in g["rules"]]
    missing = {s.name: e for e in exprs for s in selectors(e) if s.name not in exported}
    assert not missing, missing


def readme_metric_names() -> set[str]:
    """The backticked names in the README's "Metrics" section, label lists dropped."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Metrics\n", 1)[1].split("\n## ", 1)[0]
    table = "\n".join(line for line in section.splitlines() if line.startswith("|"))
    # Metric names have an underscore; label names in the prose (`name`, `controller`) mostly do not.
    return {m.group(1) for m in re.finditer(r"`([a-z]+_[a-z_:*]*)(?:\{[^}`]*\})?`", table)}


def test_readme_metrics_table_matches_what_the_operator_serves(scraped_demo: Prometheus) -> None:
    # Families come from the exposition's TYPE lines, so a labelled family with no series yet counts.
    job, _ = operator_job()
    [target] = [t for t in scraped_demo.targets() if t["labels"]["job"] == job]
    with urllib.request.urlopen(target["scrapeUrl"], timeout=10) as resp:
        families = set(re.findall(r"^# TYPE (\S+) ", resp.read().decode(), re.MULTILINE))
    documented = readme_metric_names()
    prefixes = tuple(n[:-1] for n in documented if n.endswith("*"))
    assert {f for f in families if not f.startswith(prefixes)} == {n for n in documented if "*" not in n}
    assert all(any(f.startswith(p) for f in families) for p in prefixes), prefixes
