"""The Redis cleanup Job's program against Ray 2.60's real ``cleanup_redis_storage`` (``real_ray``).

The Job the operator builds for a deleted GCS-FT cluster is run as its container would run it:
its ``args`` through bash, its plain ``env`` values, ``python`` being this venv's, which has the
real ``ray``. So Ray's own argument checks (``Password must be a string``) and its C++ Redis client
(``AUTH``, ``SCAN``/``DEL`` of ``RAY<storage namespace>@*``) decide. Redis itself is
:class:`~tests.real_ray.redis_stub.RedisStub` (no Redis server here); the keys of other storage
namespaces must survive. ``bash -c`` stands in for the Job's ``bash -lc``: a login shell would
reset PATH to the system python, which has no ray.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.redis_cleanup import build_redis_cleanup_job

from .redis_stub import RedisStub

pytestmark = pytest.mark.real_ray

UID = "0b1c5e0e-6f4f-4d39-9c7e-5a7a1f1f2d11"  # the storage namespace: the RayCluster's uid
RUN_BOUND = 120.0  # importing ray on a loaded 2-core machine, not a performance figure


def ray_installed() -> str | None:
    try:
        import ray._private.gcs_utils  # noqa: F401
    except ImportError as exc:
        return f"ray is not installed ({exc}); install the 'ray' extra"
    return None


@pytest.fixture
async def redis() -> AsyncIterator[RedisStub]:
    reason = ray_installed()
    if reason:
        pytest.skip(reason)
    stub = RedisStub()
    await stub.start()
    try:
        yield stub
    finally:
        await stub.close()


def cluster(*, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    annotations = annotations or {}
    head = {"name": "ray-head", "image": "rayproject/ray:2.60.0"}
    worker = {"name": "ray-worker", "image": "rayproject/ray:2.60.0"}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "raycluster-gcsft", "namespace": "ns", "uid": UID, "annotations": annotations},
        "spec": {
            "rayVersion": "2.60.0",
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [head]}}},
            "workerGroupSpecs": [
                {
                    "groupName": "small-group",
                    "replicas": 1,
                    "minReplicas": 1,
                    "maxReplicas": 1,
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [worker]}},
                }
            ],
        },
    }


async def run_cleanup_job(body: dict[str, Any]) -> tuple[int, str]:
    """The Job's container as the kubelet would start it: (exit code, output)."""
    job = build_redis_cleanup_job(body, RayClusterOptions())
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["/bin/bash", "-lc", "--"]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    env["PATH"] = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    proc = await asyncio.create_subprocess_exec(
        "/bin/bash",
        "-c",
        "--",
        *container["args"],
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), RUN_BOUND)
    assert proc.returncode is not None
    return proc.returncode, out.decode(errors="replace")


def seed(redis: RedisStub) -> None:
    redis.keys |= {f"RAY{UID}@NODE", f"RAY{UID}@JOB", "RAYother-cluster@NODE"}


async def test_without_password_rays_cleanup_deletes_the_clusters_keys(redis: RedisStub) -> None:
    """KubeRay e2e ``No_Redis_Password`` / ``GCS_FT_without_redis_password``: a password that is
    not a string is refused by Ray before it connects (``Password must be a string``)."""
    seed(redis)
    body = cluster()
    body["spec"]["gcsFaultToleranceOptions"] = {"redisAddress": f"127.0.0.1:{redis.port}"}
    code, out = await run_cleanup_job(body)
    assert code == 0, out
    assert redis.keys == {"RAYother-cluster@NODE"}
    assert not [c for c in redis.commands if c[0].upper() == "AUTH"]


async def test_password_in_ray_start_params_reaches_rays_cleanup(redis: RedisStub) -> None:
    """KubeRay e2e ``GCS_FT_with_redis_password_in_ray_start_params``: the annotation and a
    literal ``redis-password``; the head's ``REDIS_PASSWORD`` (copied by the operator) is what the
    Job authenticates with."""
    redis.password = "5241590000000000"
    seed(redis)
    body = cluster(annotations={"ray.io/ft-enabled": "true"})
    head = body["spec"]["headGroupSpec"]
    head["rayStartParams"]["redis-password"] = redis.password
    head["template"]["spec"]["containers"][0]["env"] = [
        {"name": "RAY_REDIS_ADDRESS", "value": f"127.0.0.1:{redis.port}"}
    ]
    code, out = await run_cleanup_job(body)
    assert code == 0, out
    assert redis.keys == {"RAYother-cluster@NODE"}
    assert ["AUTH", redis.password] in redis.commands


async def test_username_and_password_reach_rays_cleanup(redis: RedisStub) -> None:
    """KubeRay e2e ``Redis_Password_and_Username``: ``username=`` is passed (Ray sends
    ``AUTH user password``)."""
    redis.password, redis.username = "5241590000000000", "kuberay"
    seed(redis)
    body = cluster()
    body["spec"]["gcsFaultToleranceOptions"] = {
        "redisAddress": f"127.0.0.1:{redis.port}",
        "redisUsername": {"value": "kuberay"},
        "redisPassword": {"value": redis.password},
    }
    code, out = await run_cleanup_job(body)
    assert code == 0, out
    assert redis.keys == {"RAYother-cluster@NODE"}
    assert ["AUTH", "kuberay", redis.password] in redis.commands
