"""Fake Ray nodes for the raysim unit tests: Pod manifests, a serve config, a stepped cluster.

The tests run each fake node on its own loopback address and move time only with a FakeClock,
so one module builds the Pods and the cluster the same way for every test file.
"""

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import aiohttp

from controllers.raysim import RayPodRuntime, Timings
from kuberay_py.clock import FakeClock

TIMINGS = Timings(build_s=2.0, replica_start_s=1.0, drain_s=30.0)


def ray_pod(
    name: str, node_type: str, num_cpus: str, cluster: str = "rc", env: list[Any] | None = None
) -> dict:
    head = "--head " if node_type == "head" else "--address=rc-head-svc:6379 "
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "labels": {"ray.io/node-type": node_type, "ray.io/cluster": cluster},
        },
        "spec": {
            "containers": [
                {
                    "name": "ray-head" if node_type == "head" else "ray-worker",
                    "command": ["/bin/bash", "-c", "--"],
                    "args": [
                        f"ulimit -n 65536; ray start {head} --block --dashboard-agent-listen-port=52365 "
                        f"--metrics-export-port=8080 --num-cpus={num_cpus}"
                    ],
                    "env": env or [],
                }
            ]
        },
    }


def fruit_config(replicas: int, **extra: Any) -> dict:
    return {
        "http_options": {"port": 8000},
        "applications": [
            {
                "name": "fruit_app",
                "import_path": "fruit:app",
                "route_prefix": "/fruit",
                "deployments": [
                    {
                        "name": "Fruit",
                        "num_replicas": replicas,
                        "ray_actor_options": {"num_cpus": 0.5},
                        **extra,
                    }
                ],
            }
        ],
    }


@asynccontextmanager
async def fake_cluster(head: str, workers: Sequence[str]) -> AsyncIterator[tuple[RayPodRuntime, FakeClock]]:
    """A head with ``num-cpus 0`` on ``head`` and a one-CPU worker ``worker-<i>`` per address."""
    clock = FakeClock()
    runtime = RayPodRuntime(clock=clock, timings=TIMINGS)
    await runtime.start(ray_pod("head", "head", "0"), head)
    for i, ip in enumerate(workers):
        await runtime.start(ray_pod(f"worker-{i}", "worker", "1"), ip)
    try:
        yield runtime, clock
    finally:
        await runtime.close()


async def get(http: aiohttp.ClientSession, url: str, **kw: Any) -> tuple[int | None, str]:
    try:
        async with http.get(url, **kw) as r:
            return r.status, await r.text()
    except aiohttp.ClientConnectorError:
        return None, "refused"


async def step(runtime: RayPodRuntime, clock: FakeClock, seconds: float) -> None:
    await clock.advance(seconds)
    await runtime.cluster("ns", "rc").tick()
