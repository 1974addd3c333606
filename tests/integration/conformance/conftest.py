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
from tests.crd_docs import crd_doc


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


WIDGET_CRD = crd_doc(
    "conformance.kuberay.io",
    "widgets",
    "Widget",
    [
        {
            "name": "v1",
            "served": True,
            "storage": True,
            "subresources": {"status": {}},
            "schema": {
                "openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": {"type": "object"},
                        "spec": {
                            "type": "object",
                            "required": ["size"],
                            "properties": {
                                "size": {"type": "integer", "minimum": 1, "maximum": 10},
                                "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                                "name": {"type": "string", "maxLength": 8, "pattern": "^[a-z]+$"},
                                "port": {"x-kubernetes-int-or-string": True},
                                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                "tags": {"type": "array", "items": {"type": "string"}},
                                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                            },
                        },
                        "status": {
                            "type": "object",
                            "properties": {"phase": {"type": "string"}, "count": {"type": "integer"}},
                        },
                    },
                }
            },
        }
    ],
    singular="widget",
)

WIDGET = ("conformance.kuberay.io", "v1", "widgets")


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def widget_crd(envtest: Environment) -> str:
    await envtest.install_crds([WIDGET_CRD])
    return "widgets.conformance.kuberay.io"
