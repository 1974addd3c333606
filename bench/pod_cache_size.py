"""Memory and CPU of one cached Pod: whole (managedFields stripped) vs the operator's ``slim_pod``.

Pods are what the operator really caches: head and worker Pods from the RayCluster builders (the
``raycluster_scale`` bench's cluster), with the status the simulated kubelet writes (five
conditions, container statuses) and a managedFields entry, encoded to JSON once. Each variant
decodes every Pod with orjson and transforms it, as the informer does, and tracemalloc counts what
stays allocated per Pod. ``slim_no_intern`` is ``slim_pod`` with string interning disabled, to show
what interning buys.

Run: ``.venv/bin/python bench/pod_cache_size.py [--clusters 100 --workers 10]``
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
import tracemalloc
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.raycluster_scale import cluster as make_cluster  # noqa: E402
from controllers.raycluster import pod_cache  # noqa: E402
from controllers.raycluster.options import RayClusterOptions  # noqa: E402
from controllers.raycluster.pod import build_head_pod, build_worker_pod  # noqa: E402
from kuberay_py.cache import strip_managed_fields  # noqa: E402
from kuberay_py.envtest.sim.podstatus import ContainerState, build_status  # noqa: E402
from kuberay_py.objects import Obj  # noqa: E402


def encoded_pods(clusters: int, workers: int) -> list[bytes]:
    opts = dataclasses.replace(RayClusterOptions.from_env({}), enable_probes_injection=False)
    out = []
    for i in range(clusters):
        rc = make_cluster(f"rc-{i:03d}", "bench", workers)
        rc["metadata"].update(uid=str(uuid.uuid4()), generation=1)
        group = rc["spec"]["workerGroupSpecs"][0]
        for j in range(workers + 1):
            pod = build_head_pod(rc, opts) if j == 0 else build_worker_pod(rc, group, opts)
            meta = pod["metadata"]
            meta.update(
                name=meta["generateName"] + uuid.uuid4().hex[:5],
                namespace="bench",
                uid=str(uuid.uuid4()),
                resourceVersion=str(1000 + i * 20 + j),
                creationTimestamp="2026-11-29T20:00:00Z",
                managedFields=[{"manager": "kuberay-operator", "operation": "Update", "fieldsV1": {}}],
            )
            pod["spec"].update(nodeName="node-1")
            pod["spec"].setdefault("restartPolicy", "Always")
            containers = [
                ContainerState(
                    name=c["name"], image=c.get("image", ""), started_at="2026-11-29T20:00:01Z", ready=True
                )
                for c in pod["spec"]["containers"]
            ]
            pod["status"] = build_status(
                pod,
                pod_ip=f"10.0.{i}.{j}",
                host_ip="10.1.0.1",
                start_time="2026-11-29T20:00:01Z",
                containers=containers,
                now="2026-11-29T20:00:02Z",
            )
            out.append(orjson.dumps(pod))
    return out


def _no_intern(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _no_intern(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_intern(v) for v in value]
    return value


def kib_per_pod(raw: list[bytes], transform: Callable[[Obj], Obj]) -> float:
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = [transform(orjson.loads(b)) for b in raw]
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del kept
    return round((after - before) / len(raw) / 1024, 2)


def us_per_pod(raw: list[bytes], transform: Callable[[Obj], Obj], repeat: int = 5) -> float:
    decoded = [[orjson.loads(b) for b in raw] for _ in range(repeat)]
    best = float("inf")
    for batch in decoded:
        t0 = time.perf_counter()
        for obj in batch:
            transform(obj)
        best = min(best, time.perf_counter() - t0)
    return round(best / len(raw) * 1e6, 1)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--clusters", type=int, default=100)
    p.add_argument("--workers", type=int, default=10)
    args = p.parse_args()
    raw = encoded_pods(args.clusters, args.workers)
    full = kib_per_pod(raw, strip_managed_fields)
    slim = kib_per_pod(raw, pod_cache.slim_pod)
    intern = pod_cache._intern
    pod_cache._intern = _no_intern
    try:
        slim_no_intern = kib_per_pod(raw, pod_cache.slim_pod)
    finally:
        pod_cache._intern = intern
    t0 = time.perf_counter()
    for b in raw:
        orjson.loads(b)
    decode_us = round((time.perf_counter() - t0) / len(raw) * 1e6, 1)
    result = {
        "pods": len(raw),
        "json_bytes_per_pod": round(sum(map(len, raw)) / len(raw)),
        "full_kib_per_pod": full,
        "slim_kib_per_pod": slim,
        "slim_no_intern_kib_per_pod": slim_no_intern,
        "slim_vs_full": round(slim / full, 3),
        "decode_us_per_pod": decode_us,
        "slim_pod_us_per_pod": us_per_pod(raw, pod_cache.slim_pod),
    }
    print(orjson.dumps(result).decode())


if __name__ == "__main__":
    main()
