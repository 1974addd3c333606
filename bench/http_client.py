"""CPU per API request: the client's HTTP/1.1 transport against aiohttp, on the same server.

Why this exists: under KubeRay's 100m CPU limit the operator's convergence time is its CPU time,
and most of its requests are Pod creates. This sends the same Pod POSTs (a worker-sized Pod body)
through :class:`kuberay_py.client.Client` and through an ``aiohttp.ClientSession`` doing what the
client did before issue 30 (same headers, same TLS context, ``orjson`` both ways), one at a time
and 16 at a time, alternating rounds, and reports the operator thread's CPU (``time.thread_time``)
per request, on asyncio's loop and on uvloop. The API server is a real kube-apiserver when
``KUBEBUILDER_ASSETS`` is set (its own process, so its CPU is not counted), else the built-in one
(in this process: its CPU is counted too, so the ratio understates the difference).

    KUBEBUILDER_ASSETS=/tmp/kuberay-envtest-assets-1.36.2 .venv/bin/python bench/http_client.py

The last line is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import uvloop

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kuberay_py.client import Client, ClientConfig  # noqa: E402
from kuberay_py.client.resources import NAMESPACES, PODS  # noqa: E402
from kuberay_py.envtest import Environment  # noqa: E402

NAMESPACE = "http-client-bench"


def pod(name: str) -> dict[str, Any]:
    env = [{"name": f"RAY_ENV_{i}", "value": "v" * 24} for i in range(12)]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"ray.io/cluster": "c", "ray.io/node-type": "worker"}},
        "spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.60.0", "env": env}]},
    }


def aiohttp_create(
    config: ClientConfig,
) -> tuple[Callable[[str], Awaitable[None]], Callable[[], Awaitable[None]]]:
    """A Pod create as the client sent it through aiohttp before issue 30."""
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0, ssl=config.ssl_context if config.ssl_context else True),
        read_bufsize=2**21,
    )
    url = f"{config.host.rstrip('/')}{PODS.path(NAMESPACE)}"
    headers = {
        "Accept": "application/json",
        "User-Agent": config.user_agent,
        "Content-Type": "application/json",
    }
    if config.token:
        headers["Authorization"] = config.token

    async def create(name: str) -> None:
        async with session.post(
            url, data=orjson.dumps(pod(name)), headers=headers, timeout=aiohttp.ClientTimeout(total=30)
        ) as resp:
            body = await resp.read()
            assert resp.status == 201, (resp.status, body[:200])
            orjson.loads(body)

    return create, session.close


async def measure(config: ClientConfig, n: int, rounds: int) -> dict[str, float]:
    per_request: dict[str, list[float]] = {}
    async with Client(config) as client:

        async def ours(name: str) -> None:
            await client.create(PODS, pod(name), NAMESPACE)

        theirs, close = aiohttp_create(config)
        try:
            for r in range(rounds):
                for concurrency in (1, 16):
                    for label, create in (("http1", ours), ("aiohttp", theirs)):
                        prefix = f"{label}-c{concurrency}-r{r}"
                        started = time.thread_time()
                        for first in range(0, n, concurrency):
                            batch = range(first, min(n, first + concurrency))
                            await asyncio.gather(*(create(f"{prefix}-{i}") for i in batch))
                        cpu_ms = (time.thread_time() - started) / n * 1e3
                        per_request.setdefault(f"{label}_c{concurrency}", []).append(cpu_ms)
        finally:
            await close()
    return {key: round(statistics.median(values), 3) for key, values in per_request.items()}


async def run(loop_name: str, n: int, rounds: int) -> dict[str, float]:
    async with Environment() as env:
        async with Client(env.client_config) as admin:
            await admin.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        figures = await measure(env.client_config, n, rounds)
        figures["real_apiserver"] = float(env.real)
    return {f"{loop_name}_{k}" if k != "real_apiserver" else k: v for k, v in figures.items()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--requests", type=int, default=300, help="Pod creates per arm and round")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    results: dict[str, Any] = {}
    results.update(asyncio.run(run("asyncio", args.requests, args.rounds)))
    results.update(uvloop.run(run("uvloop", args.requests, args.rounds)))
    for loop_name in ("asyncio", "uvloop"):
        for c in (1, 16):
            ours, theirs = results[f"{loop_name}_http1_c{c}"], results[f"{loop_name}_aiohttp_c{c}"]
            results[f"{loop_name}_c{c}_http1_vs_aiohttp"] = round(ours / theirs, 3)
    results["real_apiserver"] = bool(results["real_apiserver"])
    print(json.dumps({"unit": "operator-thread CPU ms per Pod create (median of rounds)", **results}))


if __name__ == "__main__":
    main()
