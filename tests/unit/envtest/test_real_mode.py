"""Real mode end to end with stand-in binaries: flags, certificates, start order, readiness, stop.

The stand-ins (``fakebin/``) check the flags envtest passes and serve etcd's ``/health`` and an
HTTPS ``/readyz`` that demands a client certificate from the generated CA, so this exercises the
same code path a real etcd + kube-apiserver would, short of the API itself.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kuberay_py.client import Client, load_config
from kuberay_py.envtest import Environment
from kuberay_py.envtest.controlplane import Assets, ControlPlane
from kuberay_py.envtest.rest import RestError, request_json
from tests.crd_docs import crd_doc
from tests.polling import eventually, poll

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
        # the request log reads the audit log kube-apiserver was told to write
        records = await env.request_log.records()
        assert [(r.method, r.path, r.user, r.status) for r in records if r.path == "/whoami"] == [
            ("GET", "/whoami", "envtest-admin", 200)
        ]
        cp = env.control_plane
        assert cp is not None
        procs = list(cp._procs)
        assert all(p.returncode is None for p in procs)
    assert all(p.returncode is not None for p in procs), "both processes are stopped"
    assert env.control_plane is not None and env.control_plane._dir == "", "temp dirs removed"


async def test_real_mode_service_account_config_sends_only_the_token(tmp_path: Path) -> None:
    """The ServiceAccount's kubeconfig keeps the CA but drops the admin's client certificate:
    with both, kube-apiserver's x509 authenticator would win and the request would be the admin."""
    assets = Assets(
        _wrapper(tmp_path, "etcd", "fake_etcd.py"), _wrapper(tmp_path, "kube-apiserver", "fake_apiserver.py")
    )
    async with Environment(assets=assets) as env:
        path = await env.service_account_kubeconfig("kuberay-system", "kuberay-operator")
        user = yaml.safe_load(await asyncio.to_thread(Path(path).read_text))["users"][0]["user"]
        assert set(user) == {"token"}
        config = await env.service_account_config("kuberay-system", "kuberay-operator")
        async with Client(config) as client:
            who = await client.request("GET", "/whoami")
    assert who == {
        "kind": "Status",
        "user": "system:serviceaccount:kuberay-system:kuberay-operator",
        "group": "system:serviceaccounts",
    }


async def test_real_mode_reports_a_crashing_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pidfile = tmp_path / "etcd.pid"
    monkeypatch.setenv("FAKE_ETCD_PIDFILE", str(pidfile))
    bad = tmp_path / "kube-apiserver"
    bad.write_text("#!/bin/sh\nexit 3\n")
    bad.chmod(0o755)
    env = Environment(assets=Assets(_wrapper(tmp_path, "etcd", "fake_etcd.py"), str(bad)))
    with pytest.raises(RuntimeError, match="exited with 3"):
        await env.start()
    assert _gone(int(pidfile.read_text())), "the etcd started before the crash is stopped"


def _assets(tmp: Path) -> Assets:
    return Assets(_wrapper(tmp, "etcd", "fake_etcd.py"), _wrapper(tmp, "kube-apiserver", "fake_apiserver.py"))


CRD = crd_doc(
    "example.com", "widgets", "Widget", [{"name": "v1", "served": True, "storage": True}], singular="widget"
)


async def test_crd_install_survives_text_404_and_503_and_publishes_the_kubeconfig_when_served(
    tmp_path: Path,
) -> None:
    """kube-apiserver may answer a create with 503 while it starts and answers a group/version it
    does not serve yet with plain-text ``404 page not found``: both mean "not yet". The kubeconfig
    appears (in one rename) only once the group is served, so its first reader can use the CRD."""
    crd_file = tmp_path / "crd.yaml"
    crd_file.write_text(yaml.safe_dump(CRD))
    out = tmp_path / "out" / "kubeconfig"
    env = Environment([str(crd_file)], assets=_assets(tmp_path), kubeconfig_out=str(out))

    async def first_reader() -> dict[str, Any]:
        await eventually(out.exists, "the kubeconfig written", 20)
        async with Client(await load_config(str(out))) as client:
            return dict(await client.request("GET", "/apis/example.com/v1"))

    reader = asyncio.create_task(first_reader())
    async with env:
        assert env.kubeconfig_path == str(out)
        served = await asyncio.wait_for(reader, 10)
    assert [r["name"] for r in served["resources"]] == ["widgets"]
    assert not list(out.parent.glob(".kubeconfig.*")), "no temp file left beside the kubeconfig"


async def test_rest_helper_turns_a_text_body_into_an_error_with_its_status(tmp_path: Path) -> None:
    async with Environment(assets=_assets(tmp_path)) as env:
        api = await env.api_client()
        try:
            with pytest.raises(RestError) as caught:
                await request_json(api, "GET", "/apis/example.com/v1")
        finally:
            await api.close()
    assert caught.value.status == 404
    assert "404 page not found" in str(caught.value)


def _gone(pid: int) -> bool:
    """No such process, or a zombie nobody reaped yet (it runs no more either way)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux-only")
def test_a_sigkilled_demo_in_real_mode_leaves_no_etcd_or_apiserver_behind(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _assets(bin_dir)  # KUBEBUILDER_ASSETS layout: bin/etcd, bin/kube-apiserver
    pidfiles = {"etcd": tmp_path / "etcd.pid", "kube-apiserver": tmp_path / "apiserver.pid"}
    env = dict(
        os.environ,
        KUBEBUILDER_ASSETS=str(bin_dir),
        FAKE_ETCD_PIDFILE=str(pidfiles["etcd"]),
        FAKE_APISERVER_PIDFILE=str(pidfiles["kube-apiserver"]),
        FAKE_ETCD_IGNORE_SIGTERM="1",  # the kernel's SIGKILL must do it, not a polite SIGTERM
    )
    operator = Path(sys.executable).with_name("kuberay-operator")
    demo = subprocess.Popen(
        [str(operator), "demo", "--no-operator", "--kubeconfig-out", str(tmp_path / "kubeconfig")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        poll(
            lambda: all(p.exists() and p.read_text() for p in pidfiles.values()),
            timeout=60,
            what="both binaries",
        )
        pids = {name: int(p.read_text()) for name, p in pidfiles.items()}
        assert not any(_gone(pid) for pid in pids.values()), pids
    finally:
        demo.kill()
        demo.wait(10)
    poll(lambda: all(_gone(pid) for pid in pids.values()), timeout=10, what=f"{pids} to die with the demo")


async def test_stop_kills_a_binary_that_ignores_sigterm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pidfile = tmp_path / "etcd.pid"
    monkeypatch.setenv("FAKE_ETCD_PIDFILE", str(pidfile))
    monkeypatch.setenv("FAKE_ETCD_IGNORE_SIGTERM", "1")
    cp = ControlPlane(_assets(tmp_path), stop_timeout=0.5)
    await cp.start()
    pid = int(pidfile.read_text())
    await cp.stop()
    assert _gone(pid)
    assert cp._procs == []
