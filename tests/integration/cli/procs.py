"""Subprocess helpers for the CLI tests: the real ``kuberay-operator`` console script, bounded in time.

Each process's stdout and stderr are read by threads into line lists, so a test waits for a
line (with a deadline) instead of sleeping, and a failing test shows what the process printed.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[3]
# The console script pip installs with the package (README set-up); not `python -m`, so the
# entry point itself is under test.
OPERATOR = Path(sys.executable).with_name("kuberay-operator")
START_TIMEOUT = 120.0  # a loaded CI machine starts a Python process slowly
LOOPBACK = ["--metrics-addr", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0"]


class Proc:
    """A started ``kuberay-operator`` with its output collected line by line."""

    def __init__(
        self,
        *args: str,
        cwd: Path | None = None,
        program: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        """``program`` replaces the console script (e.g. a ``manager`` link to it, as the image has)."""
        env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
        self.argv = [str(program or OPERATOR), *args]
        self.popen = subprocess.Popen(
            self.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=cwd or ROOT,
        )
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._changed = threading.Condition()
        for stream, sink in ((self.popen.stdout, self.stdout), (self.popen.stderr, self.stderr)):
            threading.Thread(target=self._pump, args=(stream, sink), daemon=True).start()

    def _pump(self, stream: IO[str] | None, sink: list[str]) -> None:
        assert stream is not None
        for line in stream:
            with self._changed:
                sink.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, predicate: Callable[[str], bool], *, stream: str = "stdout", timeout: float) -> str:
        """The first line of ``stream`` matching ``predicate``; fails at the deadline or on exit."""
        sink = self.stdout if stream == "stdout" else self.stderr
        deadline = time.monotonic() + timeout
        seen = 0
        with self._changed:
            while True:
                for line in sink[seen:]:
                    if predicate(line):
                        return line
                seen = len(sink)
                if self.popen.poll() is not None and seen == len(sink):
                    self._changed.wait(0.2)  # let the pump threads drain the pipes
                    if seen == len(sink):
                        raise AssertionError(f"process exited ({self.popen.returncode}) first\n{self}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no matching line on {stream} within {timeout}s\n{self}")
                self._changed.wait(left)

    def json_log(self, event: str, *, timeout: float, **fields: Any) -> dict[str, Any]:
        """The first JSON log line on stderr with this ``event`` and these field values."""

        def matches(line: str) -> bool:
            try:
                rec = json.loads(line)
            except ValueError:
                return False
            return (
                isinstance(rec, dict)
                and rec.get("event") == event
                and all(rec.get(k) == v for k, v in fields.items())
            )

        return dict(json.loads(self.wait_for(matches, stream="stderr", timeout=timeout)))

    def signal(self, sig: int) -> None:
        self.popen.send_signal(sig)

    def wait(self, timeout: float) -> int:
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"still running after {timeout}s\n{self}") from None

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGCONT)
            self.popen.kill()
            self.popen.wait(10)

    def __str__(self) -> str:
        return (
            f"$ {' '.join(self.argv)}\n--- stdout ---\n"
            + "\n".join(self.stdout[-40:])
            + "\n--- stderr ---\n"
            + "\n".join(self.stderr[-60:])
        )


def run_to_exit(*args: str, timeout: float) -> tuple[int, Proc]:
    """Run the console script until it exits (it is killed if it outlives ``timeout``): its exit
    code, and the process for its output."""
    proc = Proc(*args)
    try:
        return proc.wait(timeout), proc
    finally:
        proc.kill()


def http_status(url: str, timeout: float = 5.0) -> int | None:
    """The HTTP status of a GET, or None when nothing listens (connection refused/reset)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as err:
        return int(err.code)
    except (urllib.error.URLError, ConnectionError):
        return None


def _kube_request(
    kubeconfig: Path, path: str, *, method: str = "GET", body: bytes | None = None, content_type: str = ""
) -> dict[str, Any]:
    """One request to the API server a kubeconfig names, with its CA and credentials.

    The built-in server is plain HTTP with a bearer token; real kube-apiserver (and the built-in
    one with ``tls=True``) is HTTPS with the kubeconfig's CA and client certificate, as kubectl
    connects.
    """
    import yaml

    config = yaml.safe_load(kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    user = config["users"][0]["user"]
    headers = {"Accept": "application/json"}
    if content_type:
        headers["Content-Type"] = content_type
    if user.get("token"):
        headers["Authorization"] = f"Bearer {user['token']}"
    context: ssl.SSLContext | None = None
    if cluster["server"].startswith("https://"):
        ca = cluster.get("certificate-authority-data")
        context = ssl.create_default_context(cadata=base64.b64decode(ca).decode() if ca else None)
        if cluster.get("certificate-authority"):
            context.load_verify_locations(cluster["certificate-authority"])
        if cluster.get("insecure-skip-tls-verify"):
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if user.get("client-certificate-data") and user.get("client-key-data"):
            with tempfile.TemporaryDirectory() as tmp:
                cert, key = Path(tmp) / "cert.pem", Path(tmp) / "key.pem"
                cert.write_bytes(base64.b64decode(user["client-certificate-data"]))
                key.write_bytes(base64.b64decode(user["client-key-data"]))
                context.load_cert_chain(str(cert), str(key))
        elif user.get("client-certificate") and user.get("client-key"):
            context.load_cert_chain(user["client-certificate"], user["client-key"])
    req = urllib.request.Request(cluster["server"] + path, data=body, headers=headers, method=method)
    with urllib.request.urlopen(req, timeout=10, context=context) as resp:
        return dict(json.loads(resp.read()))


def kube_get(kubeconfig: Path, path: str) -> dict[str, Any]:
    """GET ``path`` from the API server a kubeconfig names."""
    return _kube_request(kubeconfig, path)


def kube_get_or_none(kubeconfig: Path, path: str) -> dict[str, Any] | None:
    """GET ``path``, or None while the object does not exist yet (404), for polls on objects
    another process creates."""
    try:
        return _kube_request(kubeconfig, path)
    except urllib.error.HTTPError as err:
        if err.code == 404:
            return None
        raise


def kube_patch(kubeconfig: Path, path: str, patch: list[dict[str, Any]]) -> dict[str, Any]:
    """A JSON patch through the API server a kubeconfig names (as `kubectl patch --type=json`)."""
    return _kube_request(
        kubeconfig,
        path,
        method="PATCH",
        body=json.dumps(patch).encode(),
        content_type="application/json-patch+json",
    )


def kube_create(kubeconfig: Path, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """A POST of ``body`` to the collection ``path`` (as `kubectl create -f`)."""
    return _kube_request(
        kubeconfig, path, method="POST", body=json.dumps(body).encode(), content_type="application/json"
    )
