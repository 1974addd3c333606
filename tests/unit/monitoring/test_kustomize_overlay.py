"""The README's monitoring overlay, built with kubectl's kustomize exactly as written there.

It must label every Prometheus Operator object with the release label (kube-prometheus-stack's
selectors) and, with the optional second patch, replace the rules' one scope expression.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (its kustomize) not on PATH")


def readme_blocks() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    quickstart = readme.split("\n## Quickstart on a real cluster\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```yaml\n(.*?)```", quickstart, re.DOTALL)


def build(tmp_path: Path, kustomization: str) -> list[dict[str, Any]]:
    (tmp_path / "kuberay-py").symlink_to(ROOT)  # the checkout, where the README puts it
    (tmp_path / "monitoring").mkdir()
    (tmp_path / "monitoring" / "kustomization.yaml").write_text(kustomization)
    done = subprocess.run(
        ["kubectl", "kustomize", str(tmp_path / "monitoring")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def test_the_release_patch_labels_every_monitoring_object(tmp_path: Path) -> None:
    overlay, _ = readme_blocks()
    docs = build(tmp_path, overlay)
    kinds = sorted((d["kind"], d["metadata"]["name"]) for d in docs)
    assert kinds == [
        ("PodMonitor", "ray-head-monitor"),
        ("PodMonitor", "ray-workers-monitor"),
        ("PrometheusRule", "kuberay-operator"),
        ("ServiceMonitor", "kuberay-operator"),
    ]
    assert all(d["metadata"]["labels"]["release"] == "kube-prometheus-stack" for d in docs)
    # The selectors are untouched: the label goes on the objects, not on what they select.
    monitor = next(d for d in docs if d["kind"] == "ServiceMonitor")
    assert "release" not in monitor["spec"]["selector"]["matchLabels"]


def test_the_scope_patch_replaces_the_one_scope(tmp_path: Path) -> None:
    overlay, scope = readme_blocks()
    docs = build(tmp_path, overlay + scope)
    [rule] = [d for d in docs if d["kind"] == "PrometheusRule"]
    first = rule["spec"]["groups"][0]["rules"][0]
    assert first == {
        "record": "kuberay_operator:up",
        "expr": 'up{job="my-kuberay-metrics", namespace="ray-system"}',
    }
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
