"""A real Prometheus scrapes the demo operator; every dashboard and alert query runs against it.

Debian's ``prometheus`` package (installed by ``.ci/run``) provides ``prometheus`` and ``promtool``.
Everything listens on 127.0.0.1 only. Waiting is done by polling Prometheus' own API for scrapes
that happened, never by sleeping for a fixed time.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.cli.procs import LOOPBACK, Proc, poll

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "config" / "grafana" / "kuberay-operator-dashboard.json"
RULES = ROOT / "config" / "prometheus" / "rules.yaml"

pytestmark = [
    pytest.mark.prometheus,
    pytest.mark.skipif(
        not (shutil.which("prometheus") and shutil.which("promtool")),
        reason="prometheus/promtool not on PATH (Debian package 'prometheus'; .ci/run installs it)",
    ),
]


def panel_queries() -> list[tuple[str, str]]:
    """(panel title, PromQL) for every target of every panel, rows included."""

    def walk(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for panel in panels:
            yield panel
            yield from walk(panel.get("panels") or [])

    dashboard = json.loads(DASHBOARD.read_text())
    return [
        (panel.get("title", "?"), target["expr"])
        for panel in walk(dashboard["panels"])
        for target in panel.get("targets") or []
        if target.get("expr")
    ]


def rule_groups() -> list[dict[str, Any]]:
    rule = yaml.safe_load(RULES.read_text())
    assert rule["kind"] == "PrometheusRule"
    groups: list[dict[str, Any]] = rule["spec"]["groups"]
    return groups


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Prometheus:
    def __init__(self, url: str) -> None:
        self.url = url

    def query(self, promql: str) -> dict[str, Any]:
        q = urllib.parse.urlencode({"query": promql})
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/query?{q}", timeout=10) as resp:
                return dict(json.loads(resp.read()))
        except urllib.error.HTTPError as err:
            body = err.read()
            try:  # 400/422 carry the parse error as JSON
                return dict(json.loads(body))
            except ValueError:
                # While its TSDB starts, Prometheus answers a plain-text 503 "Service Unavailable":
                # not ready yet, which the start-up poll treats like a refused connection.
                raise ConnectionError(f"prometheus answered {err.code}: {body[:200]!r}") from err

    def value(self, promql: str) -> float | None:
        result = self.query(promql).get("data", {}).get("result") or []
        return float(result[0]["value"][1]) if result else None


@pytest.fixture(scope="module")
def scraped_demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    tmp = tmp_path_factory.mktemp("prometheus")
    demo = Proc("demo", *LOOPBACK)
    prom: subprocess.Popen[bytes] | None = None
    try:
        line = demo.wait_for(lambda s: s.startswith("operator running; metrics: "), timeout=120)
        target = line.rsplit("http://", 1)[1]
        # Let the samples become ready so the Serve/readiness series have values to show.
        demo.wait_for(lambda s: s == "all objects are ready", timeout=240)
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "scrape_configs": [{"job_name": "kuberay-operator", "static_configs": [{"targets": [target]}]}],
        }
        (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
        port = _free_port()
        prom = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={tmp / 'prometheus.yml'}",
                f"--storage.tsdb.path={tmp / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=(tmp / "prometheus.log").open("wb"),
        )
        api = Prometheus(f"http://127.0.0.1:{port}")

        def scraped_enough() -> bool:
            assert prom is not None and prom.poll() is None, (tmp / "prometheus.log").read_text()[-3000:]
            try:
                up = api.value('up{job="kuberay-operator"}')
                samples = api.value('count_over_time(up{job="kuberay-operator"}[5m])')
            except OSError:
                return False
            return up == 1 and samples is not None and samples >= 4  # rate() needs two in its window

        poll(scraped_enough, timeout=120, what="Prometheus to scrape the operator a few times")
        yield api
    finally:
        if prom is not None:
            prom.terminate()
            prom.wait(30)
        demo.signal(2)
        try:
            demo.wait(60)
        finally:
            demo.kill()


@pytest.mark.parametrize(("title", "expr"), panel_queries(), ids=[t for t, _ in panel_queries()])
def test_every_dashboard_query_parses_and_returns_a_series(
    scraped_demo: Prometheus, title: str, expr: str
) -> None:
    answer = scraped_demo.query(expr)
    assert answer["status"] == "success", f"{title}: {expr}: {answer.get('error')}"
    assert answer["data"]["result"], f"panel {title!r} shows no data: {expr}"


@pytest.mark.parametrize(
    "rule", [r for g in rule_groups() for r in g["rules"]], ids=lambda r: r.get("alert") or r.get("record")
)
def test_every_alert_expression_parses(scraped_demo: Prometheus, rule: dict[str, Any]) -> None:
    answer = scraped_demo.query(rule["expr"])
    assert answer["status"] == "success", f"{rule['alert']}: {answer.get('error')}"


def test_healthy_demo_fires_no_alert_condition(scraped_demo: Prometheus) -> None:
    # Everything in the demo is healthy and leading: no alert expression holds right now.
    firing = {
        rule["alert"]: result
        for group in rule_groups()
        for rule in group["rules"]
        if (result := scraped_demo.query(rule["expr"])["data"]["result"])
    }
    assert not firing, firing


def test_demo_exports_the_metrics_the_dashboard_names(scraped_demo: Prometheus) -> None:
    for name in (
        "kuberay_head_proxy_healthy",
        "kuberay_serve_endpoints",
        "kuberay_cluster_info",
        "kuberay_service_condition_ready",
        "leader_election_master_status",
    ):
        assert scraped_demo.query(name)["data"]["result"], name
    assert scraped_demo.value("min(kuberay_head_proxy_healthy)") == 1


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


_NOT_METRICS = {
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "inf",
    "nan",
}


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads (functions, keywords, labels and strings removed)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)  # string literals
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # range selectors
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    names = set()
    for match in re.finditer(r"(?<![\w$.])([a-zA-Z_:][a-zA-Z0-9_:]*)\b(\s*\()?", text):
        name, call = match.group(1), match.group(2)
        if not call and name.lower() not in _NOT_METRICS:
            names.add(name)
    return names


def test_metric_name_extraction() -> None:
    assert metric_names(
        "sum by (name) (workqueue_depth) > 10 and sum by (name) (deriv(workqueue_depth[15m])) > 0"
    ) == {"workqueue_depth"}
    assert metric_names(
        'max by (namespace, name) (kuberay_service_condition_ready{condition="false"}) == 1'
    ) == {"kuberay_service_condition_ready"}
    assert metric_names("count(kuberay_head_proxy_healthy == 0) or vector(0)") == {
        "kuberay_head_proxy_healthy"
    }


def test_every_metric_a_query_names_is_exported(scraped_demo: Prometheus) -> None:
    # A misspelt name still parses, and `... or vector(0)` or an alert would just stay silent:
    # so each name read by a panel or an alert must be one the operator really exports.
    with urllib.request.urlopen(f"{scraped_demo.url}/api/v1/label/__name__/values", timeout=10) as resp:
        exported = set(json.loads(resp.read())["data"])
    exprs = [e for _, e in panel_queries()] + [r["expr"] for g in rule_groups() for r in g["rules"]]
    missing = {name: e for e in exprs for name in metric_names(e) if name not in exported}
    assert not missing, missing
