from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kuberay_py.envtest.apiserver.registry import ResourceType
from kuberay_py.envtest.apiserver.tables import human_duration, json_path, table, wants_table


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (5, "5s"),
        (119, "119s"),
        (125, "2m5s"),
        (600, "10m"),
        (3 * 3600 + 60, "3h1m"),
        (30 * 3600, "30h"),
        (3 * 86400 + 3600, "3d1h"),
        (20 * 86400, "20d"),
        (3 * 365 * 86400, "3y0d"),
        (-5, "<invalid>"),
    ],
)
def test_human_duration(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text


def test_json_path_subset() -> None:
    obj = {"status": {"state": "ready", "groups": [{"n": 1}, {"n": 2}]}}
    assert json_path(obj, ".status.state") == ["ready"]
    assert json_path(obj, ".status.groups[*].n") == [1, 2]
    assert json_path(obj, ".status.groups[1].n") == [2]
    assert json_path(obj, ".status.missing") == []


def test_printer_columns_and_wants_table() -> None:
    assert wants_table("application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
    assert not wants_table("application/json")
    rt = ResourceType(
        "ray.io",
        "v1",
        "RayCluster",
        "rayclusters",
        crd_name="rayclusters.ray.io",
        printer_columns=(
            {"name": "status", "type": "string", "jsonPath": ".status.state"},
            {"name": "age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ),
    )
    now = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)
    obj = {
        "metadata": {"name": "rc", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "status": {"state": "ready"},
    }
    t = table(rt, [obj], now, "None")
    assert [c["name"] for c in t["columnDefinitions"]] == ["Name", "status", "age"]
    assert t["rows"] == [{"cells": ["rc", "ready", "10m"]}]
