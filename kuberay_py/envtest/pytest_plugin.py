"""pytest fixtures for envtest: one API server per session, a fresh namespace per test.

Registered through the ``pytest11`` entry point ``kuberay_envtest``. Fixtures:

* ``envtest`` (session): a started :class:`Environment`; CRDs from the ``envtest_crd_paths`` ini
  option are installed. Built-in fault knobs are on ``envtest.server`` (``None`` in real mode).
* ``envtest_sim`` (session): a second Environment with the cluster simulator running.
* ``k8s``: a :class:`kuberay_py.client.Client` on ``envtest``, closed after the test.
* ``namespace``: a new namespace name (``generateName: test-``), deleted after the test.
* ``k8s_sim`` and ``namespace_sim``: the same two on ``envtest_sim``.

In real mode the session's Environments share control planes (:mod:`kuberay_py.envtest.reuse`):
an Environment that stops hands its etcd + kube-apiserver, reset to their first ready state, to the
next one with the same flags, and the session stops them all at its end. Set
``KUBERAY_ENVTEST_REUSE=false`` to give every Environment a control plane of its own.

Tests marked ``builtin_only(reason=...)`` are skipped, with their reason, when a real
kube-apiserver is in use (a marker without a reason is a usage error). Faults injected
into the session's built-in server are cleared after each test that used ``envtest``, so a
test's leftover fault cannot fail the next one.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio

from .environment import Environment, uses_real_apiserver
from .reuse import ControlPlanePool, use_pool

if TYPE_CHECKING:
    from kuberay_py.client import Client


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "envtest_crd_paths", "CRD files/directories the envtest fixture installs", type="paths", default=[]
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "builtin_only(reason): needs what only the built-in API server does (fault injection, forced "
        "410s, cut watches); the reason says what, and is the skip message on a real kube-apiserver",
    )


def builtin_only_reason(item: pytest.Item) -> str | None:
    """The reason of a test's ``builtin_only`` marker (``None`` when unmarked). A marker without
    a reason is a usage error in both modes: every test a real kube-apiserver skips says why."""
    marker = item.get_closest_marker("builtin_only")
    if marker is None:
        return None
    reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
    if not isinstance(reason, str) or not reason.strip():
        raise pytest.UsageError(f"{item.nodeid}: builtin_only needs a reason (builtin_only(reason=...))")
    return reason


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    real = uses_real_apiserver()
    for item in items:
        reason = builtin_only_reason(item)
        if reason is not None and real:
            item.add_marker(pytest.mark.skip(reason=f"built-in API server only: {reason}"))


@pytest_asyncio.fixture(scope="session", loop_scope="session", autouse=True)
async def _envtest_control_plane_pool() -> AsyncIterator[ControlPlanePool | None]:
    """Set up before any other session fixture, so torn down after all of them: every control
    plane the session started is stopped before pytest exits."""
    if os.environ.get("KUBERAY_ENVTEST_REUSE", "true").lower() in ("0", "false", "no"):
        yield None
        return
    pool = ControlPlanePool()
    use_pool(pool)
    try:
        yield pool
    finally:
        use_pool(None)
        await pool.close()


@pytest.fixture(autouse=True)
def _envtest_clear_faults(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    for name in ("envtest", "envtest_sim"):
        if name in request.fixturenames:
            env = request.getfixturevalue(name)
            if isinstance(env, Environment) and env.server is not None:
                env.server.clear_faults()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def envtest(pytestconfig: pytest.Config) -> AsyncIterator[Environment]:
    paths = [str(p) for p in pytestconfig.getini("envtest_crd_paths")]
    async with Environment(paths) as env:
        yield env


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def envtest_sim(pytestconfig: pytest.Config) -> AsyncIterator[Environment]:
    paths = [str(p) for p in pytestconfig.getini("envtest_crd_paths")]
    async with Environment(paths, simulate=True) as env:
        yield env


@asynccontextmanager
async def _namespace_in(env: Environment) -> AsyncIterator[str]:
    name = await env.create_namespace()
    try:
        yield name
    finally:
        await env.delete_namespace(name)


@pytest_asyncio.fixture(loop_scope="session")
async def k8s(envtest: Environment) -> AsyncIterator[Client]:
    async with envtest.new_client() as client:
        yield client


@pytest_asyncio.fixture(loop_scope="session")
async def namespace(envtest: Environment) -> AsyncIterator[str]:
    async with _namespace_in(envtest) as name:
        yield name


@pytest_asyncio.fixture(loop_scope="session")
async def k8s_sim(envtest_sim: Environment) -> AsyncIterator[Client]:
    """A client on ``envtest_sim`` (the simulated cluster), closed after the test."""
    async with envtest_sim.new_client() as client:
        yield client


@pytest_asyncio.fixture(loop_scope="session")
async def namespace_sim(envtest_sim: Environment) -> AsyncIterator[str]:
    """A fresh namespace in ``envtest_sim``, deleted after the test."""
    async with _namespace_in(envtest_sim) as name:
        yield name
