"""Spec-hash inputs: KubeRay's samples as written and as the API server stores them.

"Stored" means sent through our generated CRD's structural schema (prune and default), which is
what both operators read back from a real kube-apiserver. The vectors of
docs/reference/spec-hash.md §7 were computed with KubeRay's own CRDs; getting the same values from
ours also proves the two CRDs default the hashed fields alike (a takeover with either CRD
installed keeps the hashes).
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from kuberay_py.envtest.apiserver.schema import Schema

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "kuberay"
CRDS = ROOT / "config" / "crd" / "bases"


@cache
def _schema(plural: str) -> Schema:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crd = yaml.load((CRDS / f"ray.io_{plural}.yaml").read_text(), Loader=loader)
    return Schema(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


def as_written(name: str) -> dict[str, Any]:
    return copy.deepcopy(_written(name))


@cache
def _written(name: str) -> dict[str, Any]:
    path = FIXTURES / name if name.startswith("spec-hash") else FIXTURES / "samples" / name
    first: dict[str, Any] = next(yaml.safe_load_all(path.read_text()))
    return first


def as_stored(name: str) -> dict[str, Any]:
    return copy.deepcopy(_stored(name))


@cache
def _stored(name: str) -> dict[str, Any]:
    return admitted(as_written(name))


_PLURALS = {
    "RayCluster": "rayclusters",
    "RayService": "rayservices",
    "RayJob": "rayjobs",
    "RayCronJob": "raycronjobs",
}


def admitted(obj: dict[str, Any]) -> dict[str, Any]:
    """A copy of a ray.io object as the API server stores it (pruned, defaulted, nulls dropped)."""
    out = copy.deepcopy(obj)
    causes = _schema(_PLURALS[out["kind"]]).admit(out, None)
    assert not causes, causes
    return out


def ray_object(name: str) -> dict[str, Any]:
    """The sample's ray.io object as written (samples may bring ConfigMaps and others first)."""
    path = FIXTURES / "samples" / name
    found: dict[str, Any] = next(
        d for d in yaml.safe_load_all(path.read_text()) if d and d["kind"] in _PLURALS
    )
    return found
