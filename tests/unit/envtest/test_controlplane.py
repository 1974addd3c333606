"""Real-mode pieces that can run here: asset discovery, flag construction, certificates."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

from kuberay_py.envtest.audit import audit_args
from kuberay_py.envtest.controlplane import (
    Assets,
    apiserver_args,
    etcd_args,
    find_assets,
    free_port,
    make_certs,
)
from kuberay_py.envtest.environment import uses_real_apiserver
from kuberay_py.envtest.kubeconfig import kubeconfig_dict


def _exe(path: Path) -> str:
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return str(path)


def test_find_assets_from_kubebuilder_assets(tmp_path: Path) -> None:
    etcd = _exe(tmp_path / "etcd")
    api = _exe(tmp_path / "kube-apiserver")
    assert find_assets({"KUBEBUILDER_ASSETS": str(tmp_path)}) == Assets(etcd, api, None)
    kubectl = _exe(tmp_path / "kubectl")
    assert find_assets({"KUBEBUILDER_ASSETS": str(tmp_path)}) == Assets(etcd, api, kubectl)


def test_find_assets_needs_both_binaries(tmp_path: Path) -> None:
    _exe(tmp_path / "etcd")
    assert find_assets({"KUBEBUILDER_ASSETS": str(tmp_path)}) is None
    (tmp_path / "kube-apiserver").write_text("not executable")
    assert find_assets({"KUBEBUILDER_ASSETS": str(tmp_path)}) is None


def test_test_asset_variables_override_the_folder(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    custom_etcd = _exe(other / "my-etcd")
    _exe(tmp_path / "etcd")
    api = _exe(tmp_path / "kube-apiserver")
    found = find_assets({"KUBEBUILDER_ASSETS": str(tmp_path), "TEST_ASSET_ETCD": custom_etcd})
    assert found == Assets(custom_etcd, api, None)


def test_uses_real_apiserver_follows_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("USE_EXISTING_CLUSTER", raising=False)
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(tmp_path))
    assert uses_real_apiserver() is False
    _exe(tmp_path / "etcd")
    _exe(tmp_path / "kube-apiserver")
    assert uses_real_apiserver() is True
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(tmp_path / "missing"))
    monkeypatch.setenv("USE_EXISTING_CLUSTER", "true")
    assert uses_real_apiserver() is True


def test_etcd_flags_match_controller_runtime() -> None:
    args = etcd_args("/d", "http://127.0.0.1:2379", no_fsync=True)
    assert args == [
        "--data-dir=/d",
        "--listen-client-urls=http://127.0.0.1:2379",
        "--advertise-client-urls=http://127.0.0.1:2379",
        "--listen-peer-urls=http://localhost:0",
        "--unsafe-no-fsync=true",
    ]
    assert "--unsafe-no-fsync=true" not in etcd_args("/d", "http://x", no_fsync=False)


def test_apiserver_flags_match_controller_runtime() -> None:
    args = apiserver_args(
        etcd_url="http://127.0.0.1:2379", cert_dir="/c", host="127.0.0.1", port=6443, client_ca="/c/ca.crt"
    )
    for flag in (
        "--etcd-servers=http://127.0.0.1:2379",
        "--cert-dir=/c",
        "--secure-port=6443",
        "--bind-address=127.0.0.1",
        "--service-cluster-ip-range=10.0.0.0/24",
        "--allow-privileged=true",
        "--disable-admission-plugins=ServiceAccount",
        "--authorization-mode=RBAC",
        "--client-ca-file=/c/ca.crt",
        "--service-account-issuer=https://127.0.0.1:6443/",
        "--service-account-key-file=/c/sa-signer.pub",
        "--service-account-signing-key-file=/c/sa-signer.key",
    ):
        assert flag in args, flag


def test_pass_through_flags_override_defaults() -> None:
    args = apiserver_args(
        etcd_url="e",
        cert_dir="/c",
        host="127.0.0.1",
        port=1,
        client_ca="ca",
        extra=["--authorization-mode=AlwaysAllow", "--v=4"],
    )
    assert "--authorization-mode=RBAC" not in args
    assert args[-2:] == ["--authorization-mode=AlwaysAllow", "--v=4"]


def test_free_port_is_bindable() -> None:
    port = free_port()
    assert 0 < port < 65536


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl not installed")
def test_certificates_chain_and_admin_identity(tmp_path: Path) -> None:
    certs = make_certs(str(tmp_path))
    subject = subprocess.run(
        ["openssl", "x509", "-in", certs.client_cert, "-noout", "-subject"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "system:masters" in subject and "envtest-admin" in subject
    verify = subprocess.run(
        ["openssl", "verify", "-CAfile", certs.ca_cert, certs.serving_cert, certs.client_cert],
        capture_output=True,
        text=True,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
    san = subprocess.run(
        ["openssl", "x509", "-in", certs.serving_cert, "-noout", "-ext", "subjectAltName"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "IP Address:127.0.0.1" in san and "DNS:localhost" in san
    ctx = ssl.create_default_context(cafile=certs.ca_cert)
    ctx.load_cert_chain(certs.client_cert, certs.client_key)  # a usable client identity
    cfg = kubeconfig_dict(
        "https://127.0.0.1:1", ca_file=certs.ca_cert, cert_file=certs.client_cert, key_file=certs.client_key
    )
    user = cfg["users"][0]["user"]
    assert user["client-certificate-data"] and user["client-key-data"]
    assert cfg["clusters"][0]["cluster"]["certificate-authority-data"]


def test_every_control_plane_audits_to_its_own_dir_and_extra_flags_still_override(tmp_path: Path) -> None:
    audit = audit_args(str(tmp_path / "audit"))
    args = apiserver_args(etcd_url="e", cert_dir="/c", host="127.0.0.1", port=1, client_ca="ca", audit=audit)
    assert f"--audit-log-path={tmp_path / 'audit' / 'audit.log'}" in args
    assert f"--audit-policy-file={tmp_path / 'audit' / 'policy.yaml'}" in args
    assert "--audit-log-format=json" in args and "--audit-log-mode=blocking" in args
    assert "level: Metadata" in (tmp_path / "audit" / "policy.yaml").read_text()
    moved = apiserver_args(
        etcd_url="e", cert_dir="/c", host="127.0.0.1", port=1, client_ca="ca", audit=audit,
        extra=["--audit-log-path=/elsewhere"],
    )  # fmt: skip
    assert [a for a in moved if a.startswith("--audit-log-path=")] == ["--audit-log-path=/elsewhere"]
