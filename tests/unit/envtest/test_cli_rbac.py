"""``python -m kuberay_py.envtest --rbac`` serves the built-in server with RBAC enforced."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest
import yaml

from kuberay_py.envtest import uses_real_apiserver
from kuberay_py.envtest.__main__ import parse_args, serve
from tests.polling import eventually

pytestmark = pytest.mark.skipif(
    uses_real_apiserver(), reason="--rbac is a built-in server option (kube-apiserver always enforces RBAC)"
)


async def test_rbac_flag_enforces_rbac(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    stop = asyncio.Event()
    task = asyncio.create_task(serve(parse_args(["--kubeconfig-out", str(kubeconfig), "--rbac"]), stop))
    try:
        await eventually(lambda: asyncio.to_thread(kubeconfig.exists), "kubeconfig written", 30)
        doc = yaml.safe_load(await asyncio.to_thread(kubeconfig.read_text))
        server = doc["clusters"][0]["cluster"]["server"]
        token = doc["users"][0]["user"]["token"]
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{server}/api/v1/namespaces") as anonymous:
                assert anonymous.status == 403
            async with session.get(
                f"{server}/api/v1/namespaces", headers={"Authorization": f"Bearer {token}"}
            ) as r:
                assert r.status == 200
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
