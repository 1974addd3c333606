"""Loading ClientConfig from kubeconfig / in-cluster, TLS, credentials, and bad input."""

from __future__ import annotations

import asyncio
import base64
import ssl
import sys
from pathlib import Path
from typing import Any

import pytest
import structlog
import yaml
from kubernetes_asyncio.config import incluster_config

from kuberay_py.client import Client, ClientConfig, ConfigError, load_config, load_config_retrying, resources
from kuberay_py.clock import FakeClock

from .conftest import Stub


def kubeconfig(
    server: str, user: dict[str, Any], cluster_extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "ctx",
        "clusters": [{"name": "c", "cluster": {"server": server, **(cluster_extra or {})}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u", "namespace": "default"}}],
    }


def write(path: Path, data: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.fixture(autouse=True)
def _no_ambient_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


async def test_kubeconfig_token_reaches_the_server(stub: Stub, tmp_path: Path) -> None:
    path = write(tmp_path / "kc", kubeconfig(stub.url, {"token": "abc"}))
    cfg = await load_config(path, qps=5, burst=7, timeout=9)
    assert (cfg.host, cfg.token, cfg.qps, cfg.burst, cfg.timeout) == (stub.url, "Bearer abc", 5, 7, 9)
    stub.reply(200, {"kind": "Pod", "metadata": {"name": "a"}})
    async with Client(cfg) as c:
        await c.get(resources.PODS, "a", "ns")
    assert stub.requests[0].headers["Authorization"] == "Bearer abc"


async def test_kubeconfig_env_var_and_context_selection(
    stub: Stub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = kubeconfig("http://wrong.invalid:1", {"token": "abc"})
    data["clusters"].append({"name": "c2", "cluster": {"server": stub.url}})
    data["contexts"].append({"name": "other", "context": {"cluster": "c2", "user": "u"}})
    monkeypatch.setenv("KUBECONFIG", write(tmp_path / "kc", data))
    cfg = await load_config(context="other")
    assert cfg.host == stub.url


async def test_basic_auth_user(tmp_path: Path) -> None:
    cfg = await load_config(
        write(tmp_path / "kc", kubeconfig("http://h:1", {"username": "a", "password": "b"}))
    )
    assert cfg.token == "Basic " + base64.b64encode(b"a:b").decode()


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("clusters: [unclosed\n  - nope", "invalid kubeconfig"),
        (
            "apiVersion: v1\nkind: Config\ncurrent-context: missing\ncontexts: []\nclusters: []\n",
            "invalid kubeconfig",
        ),
        ("just a string\n", "invalid kubeconfig"),
    ],
)
async def test_malformed_kubeconfig_is_a_clear_config_error(
    tmp_path: Path, content: str, fragment: str
) -> None:
    path = tmp_path / "kc"
    path.write_text(content)
    with pytest.raises(ConfigError, match=fragment) as info:
        await load_config(str(path))
    assert str(path) in str(info.value)


async def test_kubeconfig_without_server_is_rejected(tmp_path: Path) -> None:
    data = kubeconfig("x", {"token": "abc"}, {"insecure-skip-tls-verify": True})
    del data["clusters"][0]["cluster"]["server"]
    with pytest.raises(ConfigError, match="no 'server'"):
        await load_config(write(tmp_path / "kc", data))
    data["clusters"][0]["cluster"] = {}
    with pytest.raises(ConfigError, match="missing or empty"):
        await load_config(write(tmp_path / "kc", data))


async def test_missing_files_and_no_config_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        await load_config(str(tmp_path / "nope"))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "a") + ":" + str(tmp_path / "b"))
    with pytest.raises(ConfigError, match="KUBECONFIG"):
        await load_config()
    monkeypatch.delenv("KUBECONFIG")
    with pytest.raises(ConfigError, match="no configuration found"):
        await load_config()


async def test_load_config_retrying_logs_and_backs_off_until_fixed(stub: Stub, tmp_path: Path) -> None:
    clock = FakeClock()
    path = tmp_path / "kc"
    path.write_text("clusters: [broken")
    with structlog.testing.capture_logs() as logs:
        task = asyncio.create_task(load_config_retrying(str(path), clock=clock))
        for expected in (0.8, 1.6):
            await _until(lambda: clock.sleepers == 1)
            assert not task.done()
            await clock.advance(expected - 0.01)
            assert clock.sleepers == 1  # still waiting: the back-off grows 0.8 s, 1.6 s, ...
            await clock.advance(0.01)
        write(path, kubeconfig(stub.url, {"token": "abc"}))
        await _until(lambda: clock.sleepers == 1 or task.done())
        await clock.advance(3.2)
        cfg = await asyncio.wait_for(task, 5)
    assert cfg.host == stub.url
    failures = [e for e in logs if e["event"] == "client_config_invalid"]
    assert len(failures) == 3
    assert failures[0]["log_level"] == "error" and str(path) in failures[0]["error"]
    assert [f["retry_in_s"] for f in failures] == [0.8, 1.6, 3.2]


async def test_in_cluster_config_with_refreshing_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tls: dict[str, str]
) -> None:
    token = tmp_path / "token"
    token.write_text("first")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", tls["ca"])
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    cfg = await load_config()
    assert cfg.host == "https://10.0.0.1:443"
    assert cfg.ssl_context is not None and cfg.ssl_context.verify_mode == ssl.CERT_REQUIRED
    assert cfg.token_source is not None
    assert await cfg.token_source() == "Bearer first"


async def test_exec_plugin_credential_is_rerun_when_expired(stub: Stub, tmp_path: Path) -> None:
    counter = tmp_path / "count"
    counter.write_text("0")
    script = tmp_path / "plugin.py"
    script.write_text(
        "import json, pathlib\n"
        f"p = pathlib.Path({str(counter)!r}); n = int(p.read_text()) + 1; p.write_text(str(n))\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', 'kind': 'ExecCredential',\n"
        "  'status': {'token': f'tok{n}', 'expirationTimestamp': '2000-01-01T00:00:00Z'}}))\n"
    )
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(script)],
            "interactiveMode": "Never",
        }
    }
    cfg = await load_config(write(tmp_path / "kc", kubeconfig(stub.url, user)))
    assert cfg.token == "Bearer tok1"
    stub.reply(200, {"kind": "Pod", "metadata": {"name": "a"}})
    async with Client(cfg) as c:
        await c.get(resources.PODS, "a", "ns")
    # The credential had already expired, so the plugin ran again for the request.
    assert stub.requests[0].headers["Authorization"] == "Bearer tok2"


# -- TLS ------------------------------------------------------------------------------------------


def _b64(path: str) -> str:
    return base64.b64encode(Path(path).read_bytes()).decode()


async def test_tls_with_embedded_ca_and_client_certificate(
    tmp_path: Path, tls: dict[str, str], tls_server: tuple[str, list[str | None]]
) -> None:
    url, peers = tls_server
    user = {"client-certificate-data": _b64(tls["client_crt"]), "client-key-data": _b64(tls["client_key"])}
    data = kubeconfig(url, user, {"certificate-authority-data": _b64(tls["ca"])})
    cfg = await load_config(write(tmp_path / "kc", data))
    async with Client(cfg) as c:
        await c.get(resources.PODS, "a", "ns")
    assert peers == ["client"]


async def test_tls_with_unknown_ca_fails_unless_insecure(
    tmp_path: Path, tls_server: tuple[str, list[str | None]]
) -> None:
    from kuberay_py.client import TransportError

    url, peers = tls_server
    cfg = await load_config(write(tmp_path / "kc", kubeconfig(url, {"token": "x"})))
    async with Client(cfg) as c:
        with pytest.raises(TransportError, match=r"(?i)certificate"):
            await c.get(resources.PODS, "a", "ns")
    insecure = await load_config(
        write(tmp_path / "kc2", kubeconfig(url, {"token": "x"}, {"insecure-skip-tls-verify": True}))
    )
    async with Client(insecure) as c:
        await c.get(resources.PODS, "a", "ns")
    assert peers == [None]


def test_client_config_validates_host() -> None:
    with pytest.raises(ConfigError, match="http"):
        ClientConfig(host="127.0.0.1:6443")


async def _until(cond: Any, turns: int = 2000) -> None:
    for _ in range(turns):
        if cond():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("condition not reached")
