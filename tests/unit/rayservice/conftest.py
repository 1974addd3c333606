"""KubeRay's RayService samples, loaded as the raw dicts the cache hands out."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

SAMPLES = Path(__file__).resolve().parents[2] / "fixtures" / "kuberay" / "samples"


def load_sample(name: str) -> dict[str, Any]:
    obj: dict[str, Any] = yaml.safe_load((SAMPLES / name).read_text())
    obj["metadata"].update({"namespace": "ns", "uid": "svc-uid", "generation": 1})
    return obj


@pytest.fixture
def sample_service() -> dict[str, Any]:
    return copy.deepcopy(load_sample("ray-service.sample.yaml"))


@pytest.fixture
def samples() -> Any:
    return load_sample
