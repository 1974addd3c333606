"""The built-in server over HTTPS: clients verify its certificate through the kubeconfig's CA."""

from __future__ import annotations

import shutil

import pytest

from kuberay_py.client import resources as r
from kuberay_py.envtest import Environment

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl not installed")


async def test_tls_environment_serves_https_with_verified_certificate() -> None:
    async with Environment(tls=True) as env:
        assert env.url.startswith("https://127.0.0.1:")
        async with env.new_client() as client:
            ns = await client.get(r.NAMESPACES, "default")
            assert ns["status"]["phase"] == "Active"
        api = await env.api_client()
        try:
            assert api.configuration.ssl_ca_cert  # kubernetes_asyncio verifies with the CA too
        finally:
            await api.close()
