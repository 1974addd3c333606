"""The project's Grafana dashboard shows one operator: the one its `job` and `namespace` variables pick.

Series without a namespace of their own (controller_runtime_*, workqueue_*, rest_client_*, the
checker's) carry the target's namespace, so their selectors match both variables. Series that keep
the Ray object's namespace (honorLabels) are tied to the chosen operator's targets with
``and on (job, instance) up{job="$job", namespace="$namespace"}``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.prometheus_harness import dashboard_targets
from tests.promql import Selector, unscoped_selectors

DASHBOARD = Path(__file__).resolve().parents[3] / "config" / "grafana" / "kuberay-operator-dashboard.json"


def dashboard() -> dict[str, Any]:
    return dict(json.loads(DASHBOARD.read_text()))


def _confined(s: Selector) -> bool:
    return s.matcher("job") == ("Equal", "$job") and s.matcher("namespace") == ("Equal", "$namespace")


def _is_scope(s: Selector) -> bool:
    return s.name == "up" and _confined(s)


def test_dashboard_has_datasource_job_and_namespace_variables() -> None:
    variables = {v["name"]: v for v in dashboard()["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    for name in ("job", "namespace"):
        assert variables[name]["type"] == "query", name
        assert variables[name]["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, name
        assert not variables[name].get("multi") and not variables[name].get("includeAll"), name
    # namespace lists the namespaces of the chosen job's targets.
    assert '{job="$job"}' in variables["namespace"]["query"]["query"]


@pytest.mark.parametrize(
    ("title", "expr"), [(t, x["expr"]) for t, x in dashboard_targets(dashboard())], ids=lambda v: str(v)[:60]
)
def test_every_panel_query_is_confined_to_the_chosen_operator(title: str, expr: str) -> None:
    assert unscoped_selectors(expr, is_scope=_is_scope, carries_scope=_confined) == [], title


def test_the_dashboard_scope_check_can_fail() -> None:
    def check(expr: str) -> list[str]:
        return unscoped_selectors(expr, is_scope=_is_scope, carries_scope=_confined)

    assert check('sum(workqueue_depth{job="$job"})') == ['workqueue_depth{job="$job"}']
    assert check('kuberay_cluster_info and on (job, instance) up{job="$job"}') == [
        "kuberay_cluster_info",
        'up{job="$job"}',
    ]
    assert check('kuberay_cluster_info and on (job, instance) up{job="$job", namespace="$namespace"}') == []
