"""config/rbac asks for nothing KubeRay v1.7.0's Helm chart does not grant (both renders).

Users swap the image under the chart's RBAC (issue 19), so a permission the code comes to need
beyond the chart must fail here first: then the need is dropped or made to degrade with a warning
(docs/differences.md), instead of a 403 in a cluster. The end-to-end half, the operator running as
the chart's ServiceAccount, is tests/integration/test_rbac_chart.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.test_rbac import cluster_role, flatten, leader_election_role

INSTALL = Path(__file__).resolve().parents[1] / "fixtures" / "kuberay" / "install"


def _chart(render: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((INSTALL / render).read_text()) if d]


def _granted(docs: list[dict[str, Any]], kind: str, name: str) -> set[tuple[str, str, str]]:
    role = next(d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name)
    return flatten(role["rules"])


@pytest.mark.parametrize(
    ("render", "kind"),
    [("helm-chart-v1.7.0-default.yaml", "ClusterRole"), ("helm-chart-v1.7.0-single-namespace.yaml", "Role")],
)
def test_our_rbac_is_within_the_charts(render: str, kind: str) -> None:
    docs = _chart(render)
    operator = _granted(docs, kind, "kuberay-operator")
    leader = _granted(docs, "Role", "kuberay-operator-leader-election")
    assert not sorted(cluster_role() - operator), "config/rbac/role.yaml grants more than the chart"
    assert not sorted(leader_election_role() - leader), "the leader-election Role grants more than the chart"


def test_the_chart_binds_its_roles_to_its_service_account() -> None:
    for render, namespace in (
        ("helm-chart-v1.7.0-default.yaml", "kuberay-system"),
        ("helm-chart-v1.7.0-single-namespace.yaml", "ray-ns"),
    ):
        docs = _chart(render)
        bindings = [d for d in docs if d["kind"] in ("RoleBinding", "ClusterRoleBinding")]
        assert {b["roleRef"]["name"] for b in bindings} == {
            "kuberay-operator",
            "kuberay-operator-leader-election",
        }
        for b in bindings:
            assert b["subjects"] == [
                {"kind": "ServiceAccount", "name": "kuberay-operator", "namespace": namespace}
            ]
