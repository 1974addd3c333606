"""Redis for GCS fault tolerance, and the Redis cleanup Job's program, in the fake Ray world.

A test deploys a :class:`FakeRedis` at an address of a namespace (KubeRay's e2e ``DeployRedis``:
``redis:6379``, with or without a password). A head Pod with GCS FT (``ray.io/ft-enabled: "true"``
and ``RAY_REDIS_ADDRESS``) that authenticates writes its storage namespace's keys there, as its
GCS would; a wrong password writes nothing (a real GCS would fail to start: not modelled).

A Redis cleanup Pod (``ray.io/node-type=redis-cleanup``) runs its container's ``python -c``
program as Python would, with the Pod's env, against :func:`cleanup_redis_storage`: Ray 2.60's
function (``ray/_private/gcs_utils.py``) with its argument checks (``Password must be a string``
for ``None``, ...) raising as Ray does, then its Redis client (``AUTH`` only with a non-empty
password, a refused connection or credential check-fails the process, exit 134) deleting the keys
``RAY<storage namespace>@*``. The program runs with no builtins but an ``import`` of exactly
``os`` (``getenv`` of the Pod's env), ``sys`` (``exit``), ``urllib.parse`` and
``ray._private.gcs_utils``; anything else fails as a Python error would (exit 1).
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from controllers import constants as C

__all__ = ["FakeRedis", "RedisRegistry", "cleanup_exit_code", "gcs_uses_redis", "is_redis_cleanup_pod"]

EXIT_PYTHON_ERROR = 1  # an uncaught exception
EXIT_CHECK_FAILED = 134  # RAY_CHECK → abort(): SIGABRT


class RayCheckFailed(Exception):
    """Ray's C++ ``RAY_CHECK`` failing: the process aborts."""


@dataclass
class FakeRedis:
    password: str = ""
    username: str = "default"
    keys: set[str] = field(default_factory=set)

    def accepts(self, username: str, password: str) -> bool:
        """Redis 7 with ``requirepass``: no AUTH is fine only without a password."""
        if not password:
            return not self.password
        return bool(self.password) and username in ("", self.username) and password == self.password

    def dbsize(self) -> int:
        return len(self.keys)


class RedisRegistry:
    """The fake Redis servers, by (namespace, host, port)."""

    def __init__(self) -> None:
        self._servers: dict[tuple[str, str, int], FakeRedis] = {}

    def deploy(self, namespace: str, address: str, password: str = "") -> FakeRedis:
        host, port = _host_port(address)
        server = FakeRedis(password=password)
        self._servers[(namespace, host, port)] = server
        return server

    def lookup(self, namespace: str, host: str, port: int) -> FakeRedis | None:
        """``<svc>`` in the Pod's namespace, ``<svc>.<ns>[.svc...]`` in ``<ns>``."""
        name = host
        if "." in host and not host.replace(".", "").isdigit():
            name, namespace = host.split(".")[:2]
        return self._servers.get((namespace, name, port))

    def gcs_started(self, pod: dict[str, Any], env: dict[str, str], flags: dict[str, str]) -> None:
        """A head's GCS with Redis storage writes its storage namespace's keys."""
        address = env.get(C.RAY_REDIS_ADDRESS, "").split(",")[0]
        if not gcs_uses_redis(pod) or not address:
            return
        parsed = urllib.parse.urlparse(address if "://" in address else "redis://" + address)
        server = self.lookup(_namespace(pod), parsed.hostname or "", parsed.port or 6379)
        password = _expand(flags.get("redis-password", ""), env)
        username = _expand(flags.get("redis-username", ""), env)
        storage = env.get(C.RAY_EXTERNAL_STORAGE_NS, "")
        if server is not None and server.accepts(username, password):
            server.keys |= {f"RAY{storage}@NODE", f"RAY{storage}@JOB", f"RAY{storage}@KV"}


def gcs_uses_redis(pod: dict[str, Any]) -> bool:
    """The head Pod's GCS stores in Redis: FT on, and an address in its Ray container's env."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    has_address = any(e.get("name") == C.RAY_REDIS_ADDRESS for e in containers[0].get("env") or [])
    return annotations.get(C.RAY_FT_ENABLED_ANNOTATION_KEY) == "true" and has_address


def is_redis_cleanup_pod(pod: dict[str, Any]) -> bool:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return labels.get(C.RAY_NODE_TYPE_LABEL_KEY) == C.NODE_TYPE_REDIS_CLEANUP


def cleanup_exit_code(pod: dict[str, Any], env: dict[str, str], registry: RedisRegistry) -> int:
    """The exit code of the cleanup Pod's first container, run as described in the module doc."""
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    line = " ".join(str(x) for x in (containers[0].get("args") or []))
    match = re.search(r'python -c "([^"]*)"', line)
    if match is None:
        return EXIT_PYTHON_ERROR
    namespace = _namespace(pod)

    def cleanup_redis_storage(
        host: Any, port: Any, password: Any, use_ssl: Any, storage_namespace: Any, username: Any = None
    ) -> bool:
        # Ray 2.60's checks, in its order.
        if not isinstance(host, str):
            raise ValueError("Host must be a string")
        if username is None:
            username = ""
        if not isinstance(username, str):
            raise ValueError("Username must be a string")
        if not isinstance(password, str):
            raise ValueError("Password must be a string")
        if port < 0:
            raise ValueError(f"Invalid port: {port}")
        if not isinstance(use_ssl, bool):
            raise TypeError("use_ssl must be a boolean")
        if not isinstance(storage_namespace, str):
            raise ValueError("storage namespace must be a string")
        server = registry.lookup(namespace, host, port)
        if server is None or use_ssl or not server.accepts(username, password):
            raise RayCheckFailed(f"Failed to connect to Redis at {host}:{port}")
        prefix = f"RAY{storage_namespace}@"
        server.keys = {k for k in server.keys if not k.startswith(prefix)}
        return True

    def getenv(name: str, default: Any = None) -> Any:
        return env.get(name, default)

    def exit_(code: int = 0) -> None:
        raise SystemExit(code)

    modules = {
        "os": SimpleNamespace(getenv=getenv),
        "sys": SimpleNamespace(exit=exit_),
        "urllib.parse": urllib.parse,
        "ray._private.gcs_utils": SimpleNamespace(cleanup_redis_storage=cleanup_redis_storage),
    }

    def import_(name: str, _g: Any = None, _l: Any = None, fromlist: Any = (), _level: int = 0) -> Any:
        if name not in modules:
            raise ModuleNotFoundError(f"No module named '{name}'")
        if fromlist or "." not in name:
            return modules[name]
        raise ModuleNotFoundError(f"No module named '{name}' (import it with from ... import)")

    try:
        exec(match.group(1), {"__builtins__": {"__import__": import_}})  # the Pod's program: see module doc
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_PYTHON_ERROR
    except RayCheckFailed:
        return EXIT_CHECK_FAILED
    except Exception:
        return EXIT_PYTHON_ERROR
    return 0


def _namespace(pod: dict[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("namespace", ""))


def _host_port(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host, int(port)


def _expand(value: str, env: dict[str, str]) -> str:
    """A ``$VAR`` flag value as the shell expands it from the container's env."""
    if value.startswith("$"):
        return env.get(value[1:].strip("{}"), "")
    return value
