"""Real mode end to end with stand-in binaries: flags, certificates, start order, readiness, stop.

The stand-ins (``fakebin/``) check the flags envtest passes and serve etcd's ``/health`` and an
HTTPS ``/readyz`` that demands a client certificate from the generated CA, so this exercises the
same code path a real etcd + kube-apiserver would, short of the API itself.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from kuberay_py.envtest import Environment
from kuberay_py.envtest.controlplane import Assets

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl not installed")
FAKEBIN = Path(__file__).parent / "fakebin"


def _wrapper(tmp: Path, name: str, script: str) -> str:
    path = tmp / name
    path.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKEBIN / script} "$@"\n')
    path.chmod(0o755)
    return str(path)


async def test_real_mode_starts_authenticates_and_stops(tmp_path: Path) -> None:
    assets = Assets(
        _wrapper(tmp_path, "etcd", "fake_etcd.py"), _wrapper(tmp_path, "kube-apiserver", "fake_apiserver.py")
    )
    env = Environment(assets=assets)
    async with env:
        assert env.real and env.server is None
        assert env.url.startswith("https://127.0.0.1:")
        async with env.new_client() as client:
            who = await client.request("GET", "/whoami")
        assert who == {"kind": "Status", "user": "envtest-admin", "group": "system:masters"}
        cp = env.control_plane
        assert cp is not None
        procs = list(cp._procs)
        assert all(p.returncode is None for p in procs)
    assert all(p.returncode is not None for p in procs), "both processes are stopped"
    assert env.control_plane is not None and env.control_plane._dir == "", "temp dirs removed"


async def test_real_mode_reports_a_crashing_binary(tmp_path: Path) -> None:
    bad = tmp_path / "kube-apiserver"
    bad.write_text("#!/bin/sh\nexit 3\n")
    bad.chmod(0o755)
    env = Environment(assets=Assets(_wrapper(tmp_path, "etcd", "fake_etcd.py"), str(bad)))
    with pytest.raises(RuntimeError, match="exited with 3"):
        await env.start()
    assert env.control_plane is not None and env.control_plane._procs == []
