"""Informer cost over the bare client, and what stripping managedFields saves, in one run.

A local aiohttp server serves ``--pods`` realistic Pods (each with a kubectl/kubelet-style
``managedFields``) as a paginated list, and a watch that streams ``--events`` MODIFIED events.

* **sync**: ``Client.list_all(limit=500)`` (baseline: HTTP + orjson) versus an ``Informer``'s
  first sync (the same list plus managedFields stripping, the indexed store, and a handler call per
  object).
* **watch**: iterating ``Client.watch`` (baseline: HTTP + line split + orjson + validation) versus
  the informer applying the same events to its store and calling a handler.
* **memory**: tracemalloc bytes per cached Pod with and without managedFields.

Each figure is the best of ``--repeat`` runs (shared machine). The last line is JSON.

    .venv/bin/python bench/informer.py
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
import json
import time
import tracemalloc
from typing import Any

import orjson
from aiohttp import web

from kuberay_py.cache import Informer
from kuberay_py.client import Client, ClientConfig, resources


def make_pod(i: int) -> dict[str, Any]:
    name = f"raycluster-worker-{i:05d}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "bench",
            "uid": f"00000000-0000-0000-0000-{i:012d}",
            "resourceVersion": str(1000 + i),
            "labels": {"ray.io/cluster": "rc", "ray.io/node-type": "worker", "ray.io/group": "g"},
            "ownerReferences": [
                {
                    "apiVersion": "ray.io/v1",
                    "kind": "RayCluster",
                    "name": "rc",
                    "uid": "rc-uid",
                    "controller": True,
                }
            ],
            "managedFields": [
                {
                    "manager": "kuberay-operator",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {
                        "f:metadata": {"f:labels": {f"f:l{j}": {} for j in range(12)}},
                        "f:spec": {f"f:c{j}": {} for j in range(30)},
                    },
                },
                {
                    "manager": "kubelet",
                    "operation": "Update",
                    "subresource": "status",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:status": {f"f:s{j}": {} for j in range(25)}},
                },
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "ray-worker",
                    "image": "rayproject/ray:2.60.0",
                    "command": ["/bin/bash", "-lc", "--"],
                    "args": ["ulimit -n 65536; ray start --address=rc-head-svc:6379 --block"],
                    "resources": {"limits": {"cpu": "1", "memory": "2Gi"}, "requests": {"cpu": "1"}},
                    "env": [{"name": f"E{j}", "value": f"v{j}"} for j in range(8)],
                }
            ],
            "nodeName": "node-1",
        },
        "status": {"phase": "Running", "podIP": f"10.0.{i // 250}.{i % 250}"},
    }


class Server:
    def __init__(self, pods: int, events: int) -> None:
        self.items = [make_pod(i) for i in range(pods)]
        lines = []
        for n in range(events):
            pod = copy.deepcopy(self.items[n % pods])
            pod["metadata"]["resourceVersion"] = str(10_000_000 + n)
            lines.append(orjson.dumps({"type": "MODIFIED", "object": pod}))
        self.stream = b"\n".join(lines) + b"\n"
        self.watch_once = True
        self.stop = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") == "true":
            resp = web.StreamResponse(headers={"Content-Type": "application/json"})
            await resp.prepare(request)
            if self.watch_once:
                self.watch_once = False
                for i in range(0, len(self.stream), 1 << 16):
                    await resp.write(self.stream[i : i + (1 << 16)])
            await self.stop.wait()  # then stay quiet until the benchmark ends
            return resp
        start = int(request.query.get("continue") or 0)
        limit = int(request.query.get("limit") or len(self.items))
        meta: dict[str, Any] = {"resourceVersion": "9999999"}
        if start + limit < len(self.items):
            meta["continue"] = str(start + limit)
        body = {
            "kind": "PodList",
            "apiVersion": "v1",
            "metadata": meta,
            "items": self.items[start : start + limit],
        }
        return web.Response(body=orjson.dumps(body), content_type="application/json")


class Counter:
    def __init__(self, target: int) -> None:
        self.n = 0
        self.target = target
        self.done = asyncio.Event()

    def _hit(self) -> None:
        self.n += 1
        if self.n >= self.target:
            self.done.set()

    def on_add(self, obj: dict[str, Any], is_initial: bool) -> None:
        self._hit()

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self._hit()

    def on_delete(self, obj: dict[str, Any]) -> None:
        self._hit()


async def measure(pods: int, events: int) -> dict[str, float]:
    server = Server(pods, events)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    cfg = ClientConfig(host=f"http://127.0.0.1:{port}", qps=0, burst=0)
    out: dict[str, float] = {}
    try:
        async with Client(cfg) as client:
            gc.collect()
            t0 = time.perf_counter()
            listed = await client.list_all(resources.PODS, "bench", limit=500)
            out["list_s"] = time.perf_counter() - t0
            assert len(listed["items"]) == pods
            del listed

            server.watch_once = True
            gc.collect()
            t0 = time.perf_counter()
            seen = 0
            async for _ in client.watch(resources.PODS, "bench", resource_version="1"):
                seen += 1
                if seen == events:
                    break
            out["watch_s"] = time.perf_counter() - t0

            server.watch_once = True
            informer = Informer(client, resources.PODS, namespace="bench")
            counter = Counter(pods + events)
            informer.add_event_handler(counter)
            gc.collect()
            t0 = time.perf_counter()
            task = asyncio.create_task(informer.run())
            await informer.wait_for_sync()
            out["informer_sync_s"] = time.perf_counter() - t0
            t1 = time.perf_counter()
            await counter.done.wait()
            out["informer_watch_s"] = time.perf_counter() - t1
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
    finally:
        server.stop.set()
        await asyncio.sleep(0)
        await runner.cleanup()
    return out


def memory_per_pod(pods: int) -> tuple[float, float]:
    raw = [orjson.dumps(make_pod(i)) for i in range(pods)]
    results = []
    for strip in (False, True):
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        kept = []
        for r in raw:
            obj = orjson.loads(r)
            if strip:
                obj["metadata"].pop("managedFields", None)
            kept.append(obj)
        used = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        results.append(used / pods)
        del kept
    return results[0], results[1]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    runs = [await measure(args.pods, args.events) for _ in range(args.repeat)]
    best = {k: min(r[k] for r in runs) for k in runs[0]}
    with_mf, without_mf = memory_per_pod(2000)
    result = {
        "pods": args.pods,
        "events": args.events,
        "list_objects_per_s": round(args.pods / best["list_s"]),
        "informer_sync_objects_per_s": round(args.pods / best["informer_sync_s"]),
        "sync_cost_ratio_vs_list_all": round(best["informer_sync_s"] / best["list_s"], 2),
        "watch_events_per_s": round(args.events / best["watch_s"]),
        "informer_events_per_s": round(args.events / best["informer_watch_s"]),
        "watch_cost_ratio_vs_bare_watch": round(best["informer_watch_s"] / best["watch_s"], 2),
        "bytes_per_pod_with_managed_fields": round(with_mf),
        "bytes_per_pod_stripped": round(without_mf),
        "managed_fields_memory_saving": round(1 - without_mf / with_mf, 2),
    }
    for k, v in result.items():
        print(f"{k:40s} {v}")
    print(json.dumps(result))


if __name__ == "__main__":
    asyncio.run(main())
