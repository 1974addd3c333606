"""Kubeconfig files for the environment, so kubectl and every client library can connect."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

__all__ = ["kubeconfig_dict", "write_kubeconfig"]


def _b64(path: str | None) -> str | None:
    return base64.b64encode(Path(path).read_bytes()).decode() if path else None


def kubeconfig_dict(
    server: str,
    *,
    token: str | None = None,
    ca_file: str | None = None,
    cert_file: str | None = None,
    key_file: str | None = None,
    name: str = "envtest",
    namespace: str = "default",
) -> dict[str, Any]:
    cluster: dict[str, Any] = {"server": server}
    if ca_file:
        cluster["certificate-authority-data"] = _b64(ca_file)
    user: dict[str, Any] = {}
    if token:
        user["token"] = token
    if cert_file and key_file:
        user["client-certificate-data"] = _b64(cert_file)
        user["client-key-data"] = _b64(key_file)
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}],
        "current-context": name,
        "preferences": {},
    }


def write_kubeconfig(path: str | Path, config: dict[str, Any]) -> str:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(yaml.safe_dump(config, sort_keys=False))
    p.chmod(0o600)
    return str(p)
