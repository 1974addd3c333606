"""Property tests: muted fields never change the hash, any other change always does.

The inputs are KubeRay's samples as the API server stores them; the mutations are generated
from a seeded RNG (reproducible) and, for "any other change", from every leaf of every spec.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from controllers.spechash import canonical_quantity_text, rayservice_cluster_hash, recreate_hash

from .conftest import as_stored

SAMPLES = [
    "ray-service.sample.yaml",
    "ray-service.incremental-upgrade.yaml",
    "ray-service.high-availability.yaml",
    "ray-cluster.complete.yaml",
    "ray-cluster.autoscaler.yaml",
    "ray-cluster.external-redis.yaml",
    "spec-hash-edge.yaml",
]
SEEDS = range(25)


def cluster_spec(name: str) -> dict[str, Any]:
    obj = as_stored(name)
    spec: dict[str, Any] = obj["spec"]["rayClusterConfig"] if obj["kind"] == "RayService" else obj["spec"]
    return spec


def _names(rng: random.Random) -> list[str]:
    return [f"w-{rng.randrange(1000)}" for _ in range(rng.randrange(0, 4))]


def _pod_spec(group: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = group.setdefault("template", {}).setdefault("spec", {})
    return spec


def mute_randomly(spec: dict[str, Any], rng: random.Random) -> None:
    """Change only fields KubeRay mutes, each with a random value (or removal)."""
    groups = [spec["headGroupSpec"], *spec.get("workerGroupSpecs", [])]
    for group in groups:
        pod = _pod_spec(group)
        if rng.random() < 0.5:
            pod["tolerations"] = [{"key": n, "operator": "Exists"} for n in _names(rng)]
        if rng.random() < 0.5:
            pod["schedulingGates"] = [{"name": n} for n in _names(rng)]
    for group in spec.get("workerGroupSpecs", []):
        for field in ("replicas", "minReplicas", "maxReplicas"):
            choice = rng.random()
            if choice < 0.4:
                group[field] = rng.randrange(0, 100)
            elif choice < 0.6:
                group.pop(field, None)
        if rng.random() < 0.6:
            group.setdefault("scaleStrategy", {})["workersToDelete"] = _names(rng)
    if rng.random() < 0.6:
        spec["upgradeStrategy"] = {"type": rng.choice(["Recreate", "None"])}


def leaf_paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaf_paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from leaf_paths(item, (*path, i))
    else:
        yield path


MUTED = {"tolerations", "schedulingGates", "replicas", "minReplicas", "maxReplicas", "workersToDelete"}


def is_muted(path: tuple[Any, ...]) -> bool:
    return path[0] == "upgradeStrategy" or any(p in MUTED for p in path)


def changed(value: Any, path: tuple[Any, ...]) -> Any:
    """A different value of the same Go type (a different decoded value, not just other text)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str) and len(path) >= 2 and path[-2] in ("limits", "requests"):
        return "7" if canonical_quantity_text(value) != "7" else "8"
    return f"{value}x"


def hashes(spec: dict[str, Any]) -> tuple[str, str]:
    return rayservice_cluster_hash(spec), recreate_hash(spec)


@pytest.mark.parametrize("name", SAMPLES)
@pytest.mark.parametrize("seed", SEEDS)
def test_muted_fields_never_change_the_hash(name: str, seed: int) -> None:
    base = cluster_spec(name)
    mutated = copy.deepcopy(base)
    mute_randomly(mutated, random.Random(f"{name}-{seed}"))
    assert hashes(mutated) == hashes(base)
    mutated["suspend"] = seed % 2 == 0
    assert rayservice_cluster_hash(mutated) == rayservice_cluster_hash(base)


@pytest.mark.parametrize("name", SAMPLES)
def test_changing_any_other_leaf_changes_the_hash(name: str) -> None:
    base = cluster_spec(name)
    before = hashes(base)
    paths = [p for p in leaf_paths(base) if not is_muted(p)]
    assert len(paths) > 10
    for path in paths:
        mutated = copy.deepcopy(base)
        parent = mutated
        for step in path[:-1]:
            parent = parent[step]
        parent[path[-1]] = changed(parent[path[-1]], path)
        after = hashes(mutated)
        if path == ("suspend",):  # cleared for the RayService hash only
            assert after[0] == before[0] and after[1] != before[1]
        else:
            assert after[0] != before[0] and after[1] != before[1], path


STRUCTURAL: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("new worker group", lambda s: s["workerGroupSpecs"].append(copy.deepcopy(s["workerGroupSpecs"][0]))),
    ("worker group removed", lambda s: s["workerGroupSpecs"].pop()),
    ("worker idle timeout", lambda s: s["workerGroupSpecs"][0].update(idleTimeoutSeconds=60)),
    ("worker suspended", lambda s: s["workerGroupSpecs"][0].update(suspend=True)),
    ("worker priority", lambda s: s["workerGroupSpecs"][0].update(priority=3)),
    ("worker hosts", lambda s: s["workerGroupSpecs"][0].update(numOfHosts=2)),
    ("head service type", lambda s: s["headGroupSpec"].update(serviceType="NodePort")),
    ("head service annotations", lambda s: s.update(headServiceAnnotations={"a": "b"})),
    ("autoscaler on", lambda s: s.update(enableInTreeAutoscaling=not s.get("enableInTreeAutoscaling"))),
    ("a new ray start param", lambda s: s["headGroupSpec"].setdefault("rayStartParams", {}).update(x="1")),
    ("a new env var", lambda s: _pod_spec(s["headGroupSpec"])["containers"][0].setdefault("env", []).append(
        {"name": "NEW", "value": ""})),
    ("a template label", lambda s: s["headGroupSpec"]["template"].setdefault("metadata", {}).setdefault(
        "labels", {}).update(new="x")),
    ("ray version", lambda s: s.update(rayVersion="9.9.9")),
    ("auth options", lambda s: s.update(authOptions={"mode": "token"})),
]  # fmt: skip


@pytest.mark.parametrize("name", SAMPLES)
@pytest.mark.parametrize(("what", "mutate"), STRUCTURAL, ids=[w for w, _ in STRUCTURAL])
def test_structural_changes_change_the_hash_even_with_muted_noise(
    name: str, what: str, mutate: Callable[[dict[str, Any]], None]
) -> None:
    base = cluster_spec(name)
    mutated = copy.deepcopy(base)
    mutate(mutated)
    mute_randomly(mutated, random.Random(f"{name}-{what}"))
    after = hashes(mutated)
    before = hashes(base)
    assert after[0] != before[0] and after[1] != before[1]
