"""Cost of loading a manifest into the ray.io/v1 models and dumping it back.

The controllers load one RayCluster/RayService per reconcile (and the RayService controller also
loads its child clusters), so the model layer must cost about what copying the dict costs, not
orders of magnitude more. Baseline: ``copy.deepcopy`` of the same dict (what a reconciler does
anyway before editing a cached object). Prints one JSON line.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from controllers.api import load_raycluster, load_rayservice
from controllers.api.validation import validate_raycluster, validate_rayservice

ROOT = Path(__file__).resolve().parents[1]
N = 3000


def _per_call_us(fn: Callable[[], Any], n: int = N) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - start) / n)
    return best * 1e6


def main() -> None:
    cluster = yaml.safe_load((ROOT / "config/samples/ray-cluster.sample.yaml").read_text())
    service = yaml.safe_load((ROOT / "config/samples/ray-service.sample.yaml").read_text())
    figures: dict[str, float] = {}
    for name, doc, load, validate in (
        ("raycluster", cluster, load_raycluster, validate_raycluster),
        ("rayservice", service, load_rayservice, validate_rayservice),
    ):
        base = _per_call_us(lambda d=doc: copy.deepcopy(d))  # type: ignore[misc]
        rt = _per_call_us(lambda d=doc, f=load: f(d).to_dict())  # type: ignore[misc]
        val = _per_call_us(lambda d=doc, f=validate: f(d))  # type: ignore[misc]
        figures[f"{name}_deepcopy_us"] = round(base, 1)
        figures[f"{name}_load_dump_us"] = round(rt, 1)
        figures[f"{name}_validate_us"] = round(val, 1)
        figures[f"{name}_load_dump_vs_deepcopy"] = round(rt / base, 2)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
