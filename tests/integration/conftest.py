"""An API server with only this project's CRDs (``config/crd/bases``): for the suites that test
the CRDs themselves (what the server accepts, stores and rejects) and the RayCluster envtest
suites, which bring their own operator.

One server for the session (``crd_env``); each test gets a client and a namespace of its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio

from kuberay_py.client import Client
from kuberay_py.envtest import Environment
from kuberay_py.envtest.reuse import ControlPlanePool, current_pool, use_pool

CRD_DIR = Path(__file__).resolve().parents[2] / "config" / "crd" / "bases"


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def crd_env() -> AsyncIterator[Environment]:
    """One API server with our CRDs for the suites that need nothing else (each test works in its
    own namespace)."""
    async with Environment([str(CRD_DIR)]) as env:
        yield env


@pytest_asyncio.fixture(loop_scope="session")
async def client(crd_env: Environment) -> AsyncIterator[Client]:
    c = crd_env.new_client()
    try:
        yield c
    finally:
        await c.close()


@pytest_asyncio.fixture(loop_scope="session")
async def ns(crd_env: Environment) -> AsyncIterator[str]:
    name = await crd_env.create_namespace()
    try:
        yield name
    finally:
        await crd_env.delete_namespace(name)


@pytest_asyncio.fixture(loop_scope="session")
async def own_pool() -> AsyncIterator[ControlPlanePool]:
    """A control-plane pool of the test's own (the session's is put back after), so what it counts
    and reuses does not depend on the tests before it."""
    before = current_pool()
    pool = ControlPlanePool()
    use_pool(pool)
    try:
        yield pool
    finally:
        use_pool(before)
        await pool.close()
