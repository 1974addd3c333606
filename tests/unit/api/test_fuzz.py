"""Seeded random manifests: validation never raises, and injected unknown fields always survive."""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

import controllers.api as api
from controllers.api import load_raycluster, load_rayservice
from controllers.api.validation import validate_raycluster, validate_rayservice

SAMPLES = Path(__file__).resolve().parents[3] / "config" / "samples"
BASES = {
    "RayCluster": yaml.safe_load((SAMPLES / "ray-cluster.sample.yaml").read_text()),
    "RayService": yaml.safe_load((SAMPLES / "ray-service.sample.yaml").read_text()),
}
JUNK: list[Any] = [None, "", "x", -1, 0, 2**40, 1.5, True, [], {}, [None], {"a": None}, "applications: ["]


def _nodes(obj: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _nodes(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _nodes(v, (*path, i))
    return out


def _replace(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    parent = obj
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = value
    return obj


@pytest.mark.parametrize("kind", ["RayCluster", "RayService"])
def test_validation_never_raises_on_mangled_manifests(kind: str) -> None:
    rng = random.Random(20261129)
    validate = validate_raycluster if kind == "RayCluster" else validate_rayservice
    flagged = 0
    for _ in range(400):
        doc = copy.deepcopy(BASES[kind])
        for _ in range(rng.randint(1, 3)):
            paths = _nodes(doc)
            doc = _replace(doc, rng.choice(paths[1:]), copy.deepcopy(rng.choice(JUNK)))
        if not isinstance(doc, dict):
            continue
        errors = validate(doc)  # must not raise
        assert all(e.path and e.message for e in errors)
        flagged += bool(errors)
    assert flagged > 200, "most random damage should be caught"


@pytest.mark.parametrize("kind", ["RayCluster", "RayService"])
def test_unknown_fields_anywhere_survive_the_round_trip(kind: str) -> None:
    rng = random.Random(7)
    load = load_raycluster if kind == "RayCluster" else load_rayservice
    for i in range(200):
        doc = copy.deepcopy(BASES[kind])
        maps = [p for p in _nodes(doc) if isinstance(_get(doc, p), dict)]
        for p in rng.sample(maps, k=min(3, len(maps))):
            _get(doc, p)[f"futureField{i}"] = f"future-value-{i}"  # a string fits typed maps too
        assert load(copy.deepcopy(doc)).to_dict() == doc


def _get(obj: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        obj = obj[part]
    return obj


def test_the_package_root_loads_both_kinds_into_its_exported_models() -> None:
    """A caller of ``controllers.api`` gets its typed models back, nested all the way down."""
    rc = api.load_raycluster(copy.deepcopy(BASES["RayCluster"]))
    assert isinstance(rc, api.RayCluster) and isinstance(rc.spec, api.RayClusterSpec)
    assert isinstance(rc.spec.head_group_spec, api.HeadGroupSpec)
    assert rc.spec.worker_group_specs and all(
        isinstance(g, api.WorkerGroupSpec) for g in rc.spec.worker_group_specs
    )
    svc = api.load_rayservice(copy.deepcopy(BASES["RayService"]))
    assert isinstance(svc, api.RayService) and isinstance(svc.spec, api.RayServiceSpec)
    assert isinstance(svc.spec.ray_cluster_config, api.RayClusterSpec)
    status = api.RayServiceStatuses.model_validate(
        {
            "activeServiceStatus": {
                "rayClusterName": "rs-abcde",
                "applicationStatuses": {
                    "app": {"status": "RUNNING", "serveDeploymentStatuses": {"d": {"status": "HEALTHY"}}}
                },
            },
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "r",
                    "message": "",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
        }
    )
    active = status.active_service_status
    assert isinstance(active, api.RayServiceStatus)
    app = (active.application_statuses or {})["app"]
    assert isinstance(app, api.AppStatus)
    assert isinstance((app.serve_deployment_statuses or {})["d"], api.ServeDeploymentStatus)
    assert isinstance((status.conditions or [])[0], api.Condition)
    assert api.GROUP == "ray.io" and api.VERSION == "v1"


def test_the_package_root_parses_serve_config_and_rejects_bad_yaml() -> None:
    config = api.parse_serve_config(BASES["RayService"]["spec"]["serveConfigV2"])
    assert config["applications"]
    with pytest.raises(api.ServeConfigError):
        api.parse_serve_config("applications: [")
