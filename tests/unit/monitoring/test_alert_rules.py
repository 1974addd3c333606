"""The alert rules, unit-tested with ``promtool test rules`` and checked for their scope.

alerts.promtool.yaml holds the cases: every alert fires when it should and stays silent next to
another operator's identical series, and with leader election off. The scope checks read every
rule through a PromQL parser: each selector must be confined to this operator through the one
recording rule ``kuberay_operator:up``, the only place that names the job and namespace.
"""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.prometheus_harness import alert_rules, operator_job, rule_groups
from tests.promql import Selector, unscoped_selectors

HERE = Path(__file__).resolve().parent
CASES = HERE / "alerts.promtool.yaml"
SCOPE = "kuberay_operator:up"

needs_promtool = pytest.mark.skipif(
    shutil.which("promtool") is None,
    reason="promtool not on PATH (Debian package 'prometheus'; .ci/run installs it)",
)


def _render(template: str, labels: dict[str, str]) -> str:
    # The rules' templates only use {{ $labels.x }}; anything else must not slip through unrendered.
    text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m.group(1)], template)
    assert "{{" not in text, text
    return text


def with_annotations(cases: dict[str, Any], groups: list[dict[str, Any]]) -> dict[str, Any]:
    """The cases with each expected alert's annotations: the rule's, rendered with its labels."""
    rules = {r["alert"]: r for g in groups for r in g["rules"] if "alert" in r}
    cases = copy.deepcopy(cases)
    for test in cases["tests"]:
        for check in test.get("alert_rule_test") or []:
            rule = rules[check["alertname"]]
            for alert in check.get("exp_alerts") or []:
                labels = {**alert["exp_labels"], "alertname": check["alertname"]}
                alert["exp_annotations"] = {k: _render(v, labels) for k, v in rule["annotations"].items()}
    return cases


def run_promtool(tmp_path: Path, groups: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    cases = with_annotations(yaml.safe_load(CASES.read_text()), groups)
    (tmp_path / "alerts_test.yaml").write_text(yaml.safe_dump(cases))
    return subprocess.run(
        ["promtool", "test", "rules", str(tmp_path / "alerts_test.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
    )


@needs_promtool
def test_promtool_unit_tests_pass(tmp_path: Path) -> None:
    done = run_promtool(tmp_path, rule_groups())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout + done.stderr


def test_every_alert_has_a_firing_case_and_both_silent_cases() -> None:
    cases = yaml.safe_load(CASES.read_text())["tests"]
    fires = {c["alertname"] for t in cases for c in t["alert_rule_test"] if c.get("exp_alerts")}
    by_name = {
        t["name"]: {c["alertname"] for c in t["alert_rule_test"] if not c.get("exp_alerts")} for t in cases
    }
    alerts = {r["alert"] for r in alert_rules()}
    assert fires == alerts, alerts ^ fires
    assert by_name["healthy operator beside another operator in trouble"] == alerts
    assert by_name["leader election off"] == alerts


@needs_promtool
def test_promtool_cases_fail_without_the_scope(tmp_path: Path) -> None:
    # The "another operator" cases can fail: with the scope join removed, the other operator's
    # series make alerts fire, and promtool says so.
    groups = copy.deepcopy(rule_groups())
    for rule in groups[0]["rules"]:
        if "alert" in rule and rule["alert"] != "KubeRayOperatorDown":
            rule["expr"] = rule["expr"].replace(f" and on (job, instance) {SCOPE}", "")
    done = run_promtool(tmp_path, groups)
    assert done.returncode != 0
    for alert in ("KubeRayLeaderLost", "KubeRayReconcileErrors", "KubeRayRayJobFailed"):
        assert alert in done.stdout + done.stderr


@needs_promtool
def test_promtool_cases_catch_the_old_leader_rule(tmp_path: Path) -> None:
    # The rule this replaced fired forever with --enable-leader-election=false.
    groups = copy.deepcopy(rule_groups())
    [rule] = [r for r in groups[0]["rules"] if r.get("alert") == "KubeRayLeaderLost"]
    rule["expr"] = "max(leader_election_master_status) < 1 or absent(leader_election_master_status)"
    done = run_promtool(tmp_path, groups)
    assert done.returncode != 0
    assert "leader election off" in done.stdout + done.stderr


def _is_scope(s: Selector) -> bool:
    return s.name == SCOPE and not s.matchers


def _never(_: Selector) -> bool:
    return False


@pytest.mark.parametrize("rule", alert_rules(), ids=lambda r: r["alert"])
def test_every_alert_selector_is_confined_to_the_operator(rule: dict[str, Any]) -> None:
    assert unscoped_selectors(rule["expr"], is_scope=_is_scope, carries_scope=_never) == []


def test_the_scope_is_one_recording_rule_matching_the_shipped_service() -> None:
    job, namespace = operator_job()
    first, *others = [r for g in rule_groups() for r in g["rules"]]
    # /spec/groups/0/rules/0/expr: the path the README's kustomize patch replaces.
    assert first["record"] == SCOPE
    assert first["expr"] == f'up{{job="{job}", namespace="{namespace}"}}'
    assert not [r for r in others if job in r["expr"] or namespace in r["expr"]]


def test_the_scope_check_flags_an_unconfined_selector() -> None:
    def check(expr: str) -> list[str]:
        return unscoped_selectors(expr, is_scope=_is_scope, carries_scope=_never)

    assert check("max(leader_election_master_status) < 1") == ["leader_election_master_status"]
    # One side of `and` confined is not enough.
    assert check(
        f"sum(workqueue_depth and on (job, instance) {SCOPE}) > 10 and sum(deriv(workqueue_depth[15m])) > 0"
    ) == ["workqueue_depth"]
    # The join must be on (job, instance): on (job) alone would take any target of the job.
    assert check(f"x and on (job) {SCOPE}") == ["x"]
    assert check(f"x and on (job, instance) {SCOPE}") == []


def _slug(heading: str) -> str:
    # GitHub's anchor for a Markdown heading.
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_alert_has_a_runbook_section() -> None:
    docs = (HERE.parents[2] / "docs" / "operations.md").read_text()
    anchors = {_slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", docs, re.MULTILINE)}
    for rule in alert_rules():
        url = rule["annotations"]["runbook_url"]
        path, _, anchor = url.partition("#")
        assert path == "docs/operations.md" and anchor in anchors, (rule["alert"], url)
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
