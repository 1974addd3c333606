"""The CLI tests' API helpers connect as kubectl does: the kubeconfig's CA and credentials.

Real mode is HTTPS with a client certificate; a helper that opens the server URL without the CA
fails there with CERTIFICATE_VERIFY_FAILED, so both TLS set-ups are exercised here.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path

import pytest

from kuberay_py.envtest import Environment
from kuberay_py.envtest.controlplane import Assets
from tests.integration.cli.procs import kube_get, kube_patch

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl not installed")
FAKEBIN = Path(__file__).resolve().parents[2] / "unit" / "envtest" / "fakebin"


def _wrapper(tmp: Path, name: str, script: str) -> str:
    path = tmp / name
    path.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKEBIN / script} "$@"\n')
    path.chmod(0o755)
    return str(path)


async def test_helpers_verify_the_builtin_servers_certificate_through_the_kubeconfig_ca(
    tmp_path: Path,
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    async with Environment(tls=True, kubeconfig_out=str(kubeconfig)) as env:
        assert env.url.startswith("https://")
        ns = await asyncio.to_thread(kube_get, kubeconfig, "/api/v1/namespaces/default")
        assert ns["metadata"]["name"] == "default"
        patched = await asyncio.to_thread(
            kube_patch,
            kubeconfig,
            "/api/v1/namespaces/default",
            [{"op": "add", "path": "/metadata/labels/checked", "value": "yes"}],
        )
        assert patched["metadata"]["labels"]["checked"] == "yes"


async def test_helpers_authenticate_with_the_kubeconfig_client_certificate(tmp_path: Path) -> None:
    """Real mode's shape: kube-apiserver demands a client certificate signed by its CA."""
    kubeconfig = tmp_path / "kubeconfig"
    assets = Assets(
        _wrapper(tmp_path, "etcd", "fake_etcd.py"), _wrapper(tmp_path, "kube-apiserver", "fake_apiserver.py")
    )
    async with Environment(assets=assets, kubeconfig_out=str(kubeconfig)):
        who = await asyncio.to_thread(kube_get, kubeconfig, "/whoami")
    assert who == {"kind": "Status", "user": "envtest-admin", "group": "system:masters"}
