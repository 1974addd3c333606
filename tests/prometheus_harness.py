"""A real Prometheus for the monitoring tests, scraping the operator as the shipped ServiceMonitor would.

The Prometheus Operator turns ``config/prometheus/monitor.yaml`` into a scrape job whose targets
carry ``job`` (the Service's name), ``namespace``, ``service``, ``pod``, ``container`` and
``endpoint``, with ``honor_labels`` from the endpoint. There is no Kubernetes service discovery
here (the operator runs as a local process), so :func:`service_monitor_scrape_config` writes the
same target labels as a static config: the queries then see the label sets a cluster's Prometheus
stores. Grafana is modelled by :func:`resolve_variables` and :func:`interpolate`, which fill a
dashboard's template variables the way Grafana's Prometheus data source does.

Everything listens on 127.0.0.1. Waiting polls Prometheus' API for things that happened (scrapes,
rule evaluations); nothing sleeps for a fixed time.
"""

from __future__ import annotations

import json
import math
import re
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from tests.polling import poll

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "config"
RULES = CONFIG / "prometheus" / "rules.yaml"
SCRAPE_INTERVAL_S = 1
# Grafana's Prometheus data source "scrape interval" setting, set to this Prometheus' interval.
ALL = "$__all"


def rule_groups() -> list[dict[str, Any]]:
    """The PrometheusRule's groups: what a rules file for Prometheus or promtool holds."""
    rule = yaml.safe_load(RULES.read_text())
    assert rule["kind"] == "PrometheusRule"
    groups: list[dict[str, Any]] = rule["spec"]["groups"]
    return groups


def alert_rules() -> list[dict[str, Any]]:
    return [r for g in rule_groups() for r in g["rules"] if "alert" in r]


def service_monitor_scrape_config(target: str, *, pod: str) -> dict[str, Any]:
    """The scrape job the Prometheus Operator generates from monitor.yaml for a Pod at ``target``.

    The Service and the Deployment come from config/manager, so ``job``, ``namespace`` and
    ``endpoint`` are the values a cluster install gives (job = the Service's name).
    """
    monitor = yaml.safe_load((CONFIG / "prometheus" / "monitor.yaml").read_text())
    service = yaml.safe_load((CONFIG / "manager" / "service.yaml").read_text())
    [endpoint] = monitor["spec"]["endpoints"]
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [service["metadata"]["namespace"]]
    labels = {
        "job": service["metadata"]["name"],
        "namespace": service["metadata"]["namespace"],
        "service": service["metadata"]["name"],
        "endpoint": endpoint["port"],
        "pod": pod,
        "container": "kuberay-operator",
    }
    return {
        "job_name": f"serviceMonitor/{monitor['metadata']['namespace']}/{monitor['metadata']['name']}/0",
        "honor_labels": bool(endpoint.get("honorLabels", False)),
        "metrics_path": endpoint.get("path", "/metrics"),
        "scrape_interval": f"{SCRAPE_INTERVAL_S}s",
        "static_configs": [{"targets": [target], "labels": labels}],
    }


def operator_job() -> tuple[str, str]:
    """(job, namespace) of the shipped install: what the rules' scope and the dashboard default to."""
    service = yaml.safe_load((CONFIG / "manager" / "service.yaml").read_text())
    return service["metadata"]["name"], service["metadata"]["namespace"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Prometheus:
    def __init__(self, url: str) -> None:
        self.url = url

    def _get(self, path: str, params: dict[str, Any]) -> dict[str, Any]:
        q = urllib.parse.urlencode(params, doseq=True)
        try:
            with urllib.request.urlopen(f"{self.url}{path}?{q}", timeout=10) as resp:
                return dict(json.loads(resp.read()))
        except urllib.error.HTTPError as err:
            body = err.read()
            try:  # 400/422 carry the parse error as JSON
                return dict(json.loads(body))
            except ValueError:
                # While its TSDB starts, Prometheus answers a plain-text 503 "Service Unavailable":
                # not ready yet, which the start-up poll treats like a refused connection.
                raise ConnectionError(f"prometheus answered {err.code}: {body[:200]!r}") from err

    def query(self, promql: str) -> dict[str, Any]:
        return self._get("/api/v1/query", {"query": promql})

    def query_range(self, promql: str, *, seconds: float, step: float) -> dict[str, Any]:
        end = time.time()
        return self._get(
            "/api/v1/query_range", {"query": promql, "start": end - seconds, "end": end, "step": step}
        )

    def value(self, promql: str) -> float | None:
        result = self.query(promql).get("data", {}).get("result") or []
        return float(result[0]["value"][1]) if result else None

    def label_values(self, label: str, match: str | None, *, seconds: float) -> list[str]:
        end = time.time()
        params: dict[str, Any] = {"start": end - seconds, "end": end}
        if match:
            params["match[]"] = match
        answer = self._get(f"/api/v1/label/{label}/values", params)
        assert answer["status"] == "success", (label, match, answer)
        return sorted(answer["data"])

    def metric_names(self) -> set[str]:
        return set(self._get("/api/v1/label/__name__/values", {})["data"])

    def rule_groups(self) -> list[dict[str, Any]]:
        return list(self._get("/api/v1/rules", {})["data"]["groups"])

    def alerting_rules(self) -> list[dict[str, Any]]:
        return [r for g in self.rule_groups() for r in g["rules"] if r["type"] == "alerting"]

    def targets(self) -> list[dict[str, Any]]:
        return list(self._get("/api/v1/targets", {"state": "active"})["data"]["activeTargets"])


@contextmanager
def running_prometheus(
    tmp: Path, scrape_configs: list[dict[str, Any]], *, with_rules: bool = True
) -> Iterator[Prometheus]:
    """Prometheus on a free loopback port with these scrape jobs (and the PrometheusRule's groups)."""
    config: dict[str, Any] = {
        "global": {
            "scrape_interval": f"{SCRAPE_INTERVAL_S}s",
            "evaluation_interval": f"{SCRAPE_INTERVAL_S}s",
        },
        "scrape_configs": scrape_configs,
    }
    if with_rules:
        (tmp / "rules.yaml").write_text(yaml.safe_dump({"groups": rule_groups()}))
        config["rule_files"] = [str(tmp / "rules.yaml")]
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = _free_port()
    log = tmp / "prometheus.log"
    prom = subprocess.Popen(
        [
            "prometheus",
            f"--config.file={tmp / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
    )
    api = Prometheus(f"http://127.0.0.1:{port}")

    def started() -> bool:
        assert prom.poll() is None, log.read_text()[-3000:]
        try:
            return api.query("1")["status"] == "success"
        except OSError:
            return False

    try:
        poll(started, timeout=60, what="Prometheus to start")
        yield api
    finally:
        prom.terminate()
        prom.wait(30)


def wait_for_scrapes(api: Prometheus, job: str, *, samples: int = 4, timeout: float = 120) -> None:
    """Until the job's targets are up and scraped ``samples`` times (rate() needs two in its window)."""

    def scraped_enough() -> bool:
        try:
            up = api.value(f'min(up{{job="{job}"}})')
            count = api.value(f'min(count_over_time(up{{job="{job}"}}[5m]))')
        except OSError:
            return False
        return up == 1 and count is not None and count >= samples

    poll(scraped_enough, timeout=timeout, what=f"Prometheus to scrape {job} {samples} times")


def wait_for_operator_to_report_ready(api: Prometheus, *, timeout: float = 60) -> None:
    """Until the operator's own series say what the demo saw in the API server: every RayService
    Ready and every head proxy healthy (its cache and its checker trail the API server a little)."""

    def reported() -> bool:
        ready = api.query('kuberay_service_condition_ready{condition="true"}')["data"]["result"]
        not_ready = api.query('kuberay_service_condition_ready{condition="false"}')["data"]["result"]
        unhealthy = api.query("kuberay_head_proxy_healthy == 0")["data"]["result"]
        return bool(ready) and not not_ready and not unhealthy

    poll(reported, timeout=timeout, what="the operator's metrics to report the samples ready")


def _timestamp(rfc3339: str) -> float:
    # Prometheus writes nanoseconds ("2026-12-02T00:10:00.123456789Z"); datetime takes microseconds.
    head, _, frac = rfc3339.rstrip("Z").partition(".")
    return datetime.fromisoformat(f"{head}.{(frac or '0')[:6]:0<6}+00:00").timestamp()


def wait_for_rules_to_see_now(api: Prometheus, job: str, *, timeout: float = 60) -> None:
    """Until every target of ``job`` was scraped after this call, and the rules evaluated after that.

    So alert states reflect what the operator exports now, not what it exported while the demo's
    objects were still becoming ready.
    """
    start = time.time()
    scraped: list[float] = []

    def fresh_scrape() -> bool:
        targets = [t for t in api.targets() if t["labels"].get("job") == job]
        times = [_timestamp(t["lastScrape"]) for t in targets if t["health"] == "up"]
        if not targets or len(times) < len(targets) or min(times) <= start:
            return False
        scraped.append(max(times))
        return True

    poll(fresh_scrape, timeout=timeout, what=f"a scrape of {job} after {start}")

    def evaluated() -> bool:
        groups = api.rule_groups()  # none loaded (yet) is not "all evaluated"
        return bool(groups) and all(_timestamp(g["lastEvaluation"]) > scraped[-1] for g in groups)

    poll(evaluated, timeout=timeout, what="a rule evaluation after that scrape")


# --- Grafana -----------------------------------------------------------------------------------


def dashboard_targets(dashboard: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(panel title, target) for every query target of every panel, panels inside rows included."""

    def walk(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for panel in panels:
            yield panel
            yield from walk(panel.get("panels") or [])

    return [
        (str(panel.get("title", "?")), target)
        for panel in walk(dashboard["panels"])
        for target in panel.get("targets") or []
        if target.get("expr")
    ]


def dashboard_seconds(dashboard: dict[str, Any]) -> float:
    """The dashboard's default time range (``now-6h`` to ``now`` and the like) in seconds."""
    match = re.fullmatch(r"now-(\d+)([smhd])", dashboard.get("time", {}).get("from", "now-6h"))
    assert match, dashboard.get("time")
    return int(match.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]


def builtin_intervals(dashboard: dict[str, Any]) -> dict[str, str]:
    """Grafana's $__interval (time range / max data points, i.e. the panel's width in pixels, 1000
    here; never below the data source's scrape interval), $__rate_interval (max($__interval +
    scrape interval, 4 * scrape interval)) and $__range."""
    seconds = dashboard_seconds(dashboard)
    interval = max(SCRAPE_INTERVAL_S, math.ceil(seconds / 1000))
    rate = max(interval + SCRAPE_INTERVAL_S, 4 * SCRAPE_INTERVAL_S)
    return {"__interval": f"{interval}s", "__rate_interval": f"{rate}s", "__range": f"{int(seconds)}s"}


_VARIABLE = re.compile(r"\$(\w+)|\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]")


def _regex_escape(value: str) -> str:
    # Grafana's prometheusSpecialRegexEscape: a value inside a regex matcher matches literally.
    return re.sub(r"([\\^$*+?.()|{}\[\]])", r"\\\\\1", value)


def _refs(text: str) -> set[str]:
    return {m.group(1) or m.group(2) or m.group(3) for m in _VARIABLE.finditer(text)}


@dataclass
class Variables:
    """A dashboard's template variables resolved against one Prometheus (see resolve_variables)."""

    dashboard: dict[str, Any]
    values: dict[str, str | list[str]] = field(default_factory=dict)
    options: dict[str, list[str]] = field(default_factory=dict)

    def definition(self, name: str) -> dict[str, Any]:
        return next(v for v in self.dashboard["templating"]["list"] if v["name"] == name)

    def interpolate(self, expr: str) -> str:
        """``expr`` with every variable replaced as Grafana's Prometheus data source formats it.

        A variable that is neither multi-value nor include-All is inserted as is; the others as a
        regex (``a``, ``(a|b)``), and "All" as the variable's allValue (or all options as a regex).
        """
        builtins = builtin_intervals(self.dashboard)

        def replace(match: re.Match[str]) -> str:
            name = match.group(1) or match.group(2) or match.group(3)
            if name in builtins:
                return builtins[name]
            if name not in self.values:
                return match.group(0)  # not a variable of this dashboard: Grafana leaves it as is
            variable, value = self.definition(name), self.values[name]
            if value == ALL:
                if variable.get("allValue"):
                    return str(variable["allValue"])
                value = self.options.get(name, [])
            if not variable.get("multi") and not variable.get("includeAll"):
                return str(value)
            escaped = [_regex_escape(v) for v in ([value] if isinstance(value, str) else value)]
            return escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")"

        return _VARIABLE.sub(replace, expr)


def _variable_query(variable: dict[str, Any]) -> str:
    query = variable.get("query")
    return str(query.get("query") if isinstance(query, dict) else query or variable.get("definition") or "")


def resolve_variables(dashboard: dict[str, Any], api: Prometheus) -> Variables:
    """Each template variable's value, as Grafana sets it when the dashboard loads.

    A query variable's options come from its ``label_values(...)`` query, run after the variables
    it refers to. The saved value is kept when the options still offer it. Otherwise it takes the
    first offered value, as a user picking from the list would (Grafana's own load would pick its
    first entry, which is "All" for an include-All variable); with no options it is All. Data
    source variables resolve to this Prometheus.
    """
    resolved = Variables(dashboard)
    seconds = dashboard_seconds(dashboard)
    pending = []
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable["type"] == "datasource":
            resolved.values[variable["name"]] = "prometheus"
        else:
            pending.append(variable)
    while pending:
        ready = [v for v in pending if not _refs(_variable_query(v)) & {p["name"] for p in pending}]
        assert ready, f"variables depend on each other in a cycle: {[p['name'] for p in pending]}"
        for variable in ready:
            name, query = variable["name"], resolved.interpolate(_variable_query(variable))
            match = re.fullmatch(r"\s*label_values\((?:(.*),)?\s*(\w+)\s*\)\s*", query)
            assert variable["type"] == "query" and match, f"unsupported variable {name}: {query}"
            options = api.label_values(
                match.group(2), (match.group(1) or "").strip() or None, seconds=seconds
            )
            resolved.options[name] = options
            saved = (variable.get("current") or {}).get("value")
            saved_list = saved if isinstance(saved, list) else [saved] if saved else []
            kept = [s for s in saved_list if s in options or s == ALL]
            if kept:
                resolved.values[name] = kept if variable.get("multi") else kept[0]
            elif options:
                resolved.values[name] = [options[0]] if variable.get("multi") else options[0]
            else:
                resolved.values[name] = ALL if variable.get("includeAll") else ""
            pending.remove(variable)
    return resolved


def panel_data(
    api: Prometheus, expr: str, target: dict[str, Any], dashboard: dict[str, Any]
) -> dict[str, Any]:
    """The query as the panel runs it: instant for ``instant`` targets, else over the time range."""
    if target.get("instant"):
        return api.query(expr)
    step = int(builtin_intervals(dashboard)["__interval"][:-1])
    return api.query_range(expr, seconds=dashboard_seconds(dashboard), step=step)


def has_data(answer: dict[str, Any]) -> bool:
    """At least one sample that is a number (a histogram_quantile over no events is NaN: no data)."""
    if answer.get("status") != "success":
        return False
    for series in answer["data"]["result"]:
        samples = series.get("values") or ([series["value"]] if "value" in series else [])
        if any(not math.isnan(float(v)) for _, v in samples):
            return True
    return False
