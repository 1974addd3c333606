"""Shared fixtures of the conformance suite: kubernetes_asyncio clients on the session environment.

The suite talks to the server the way third-party code does -- through kubernetes_asyncio's
generated APIs (and raw calls where those are known to misbehave, see runtime-semantics §3.2) --
so it can run unchanged against a real kube-apiserver (``KUBEBUILDER_ASSETS``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio
from kubernetes_asyncio import client as k

from kuberay_py.envtest import Environment


@pytest_asyncio.fixture(loop_scope="session")
async def api(envtest: Environment) -> AsyncIterator[k.ApiClient]:
    a = await envtest.api_client()
    try:
        yield a
    finally:
        await a.close()


@pytest_asyncio.fixture(loop_scope="session")
async def core(api: k.ApiClient) -> k.CoreV1Api:
    return k.CoreV1Api(api)


@pytest_asyncio.fixture(loop_scope="session")
async def custom(api: k.ApiClient) -> k.CustomObjectsApi:
    return k.CustomObjectsApi(api)
