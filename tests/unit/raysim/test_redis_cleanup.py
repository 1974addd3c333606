"""The fake Ray's Redis cleanup program: Ray 2.60's argument checks and Redis client outcomes.

What Ray 2.60 itself does with the same programs is in tests/real_ray/test_real_ray_redis_cleanup.py.
"""

from __future__ import annotations

from typing import Any

from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.redis_cleanup import build_redis_cleanup_job
from controllers.raysim.redis import (
    EXIT_CHECK_FAILED,
    EXIT_PYTHON_ERROR,
    FakeRedis,
    RedisRegistry,
    cleanup_exit_code,
)
from tests.unit.raycluster.test_pod_builder import cluster

# The command before issue 29: password=os.getenv('REDIS_PASSWORD', parsed.password), None without one.
OLD_PASSWORD = "password=os.getenv('REDIS_PASSWORD', parsed.password), "
NEW_PASSWORD = "password=os.getenv('REDIS_PASSWORD', parsed.password or ''), "


def cleanup_pod(**ft: Any) -> tuple[dict[str, Any], dict[str, str]]:
    c = cluster()
    c["spec"]["gcsFaultToleranceOptions"] = {"redisAddress": "redis:6379", **ft}
    job = build_redis_cleanup_job(c, RayClusterOptions())
    pod = {"metadata": {"namespace": "ns", "labels": job["spec"]["template"]["metadata"]["labels"]}}
    pod["spec"] = job["spec"]["template"]["spec"]
    env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"] if "value" in e}
    return pod, env


def seeded(registry: RedisRegistry, password: str = "") -> FakeRedis:
    server = registry.deploy("ns", "redis:6379", password)
    server.keys |= {"RAYuid-1@NODE", "RAYother@NODE"}
    return server


def test_without_password_the_keys_go_and_a_none_password_is_refused_as_ray_does() -> None:
    registry = RedisRegistry()
    server = seeded(registry)
    assert registry.lookup("ns", "redis.ns.svc.cluster.local", 6379) is server
    pod, env = cleanup_pod()
    args = pod["spec"]["containers"][0]["args"]
    assert NEW_PASSWORD in args[0]
    args[0] = args[0].replace(NEW_PASSWORD, OLD_PASSWORD)
    assert cleanup_exit_code(pod, env, registry) == EXIT_PYTHON_ERROR  # ValueError: Password must be a string
    assert server.keys == {"RAYuid-1@NODE", "RAYother@NODE"}
    args[0] = args[0].replace(OLD_PASSWORD, NEW_PASSWORD)
    assert cleanup_exit_code(pod, env, registry) == 0
    assert server.keys == {"RAYother@NODE"}


def test_wrong_or_missing_credentials_and_no_redis_check_fail() -> None:
    registry = RedisRegistry()
    seeded(registry, password="right")
    pod, env = cleanup_pod(redisPassword={"value": "wrong"})
    assert cleanup_exit_code(pod, env, registry) == EXIT_CHECK_FAILED
    pod, env = cleanup_pod()
    assert cleanup_exit_code(pod, env, registry) == EXIT_CHECK_FAILED  # NOAUTH
    pod, env = cleanup_pod(redisPassword={"value": "right"})
    assert cleanup_exit_code(pod, env, RedisRegistry()) == EXIT_CHECK_FAILED  # nothing listens
    assert cleanup_exit_code(pod, env, registry) == 0


def test_the_program_imports_nothing_else() -> None:
    registry = RedisRegistry()
    seeded(registry)
    pod, env = cleanup_pod()
    args = pod["spec"]["containers"][0]["args"]
    args[0] = args[0].replace("import sys; ", "import sys; import shutil; ")
    assert cleanup_exit_code(pod, env, registry) == EXIT_PYTHON_ERROR
