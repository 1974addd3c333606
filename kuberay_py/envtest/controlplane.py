"""Real mode: etcd + kube-apiserver started the way controller-runtime's envtest starts them.

Flags follow ``sigs.k8s.io/controller-runtime/pkg/internal/testing/controlplane`` (``etcd.go``,
``apiserver.go`` ``defaultArgs``): etcd on a free loopback port with a temp data dir and
``--unsafe-no-fsync`` when supported; kube-apiserver with ``--service-cluster-ip-range=10.0.0.0/24``,
``--allow-privileged=true``, ``--disable-admission-plugins=ServiceAccount``, ``--authorization-mode=RBAC``,
a generated service-account key pair and serving certificate in ``--cert-dir``, and client-certificate
authentication (``--client-ca-file``) for an admin user in ``system:masters``. Certificates are made
with the ``openssl`` command, since the ``cryptography`` package is not a dependency. One default
is ours: kube-apiserver audits every request to ``audit/audit.log`` in the control plane's temp dir
(:mod:`.audit`), the real-mode request log; being a default, it is the same for every control plane
and leaves the reuse pool's keys (the pass-through flags) as they were.

The binaries must never outlive the process that started them, however it ends: a clean exit
and an exception during start go through :meth:`ControlPlane.stop`; for SIGTERM, SIGKILL or a
crash, each child is started in its own process group with a parent-death signal (Linux
``PR_SET_PDEATHSIG`` = SIGKILL, set between fork and exec), so the kernel kills it when its
parent dies. ``stop`` signals the whole group, so helpers a binary forked go too.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import structlog

from .audit import audit_args
from .certs import RSA_KEY, openssl, self_signed_ca, serving_san, sign

__all__ = [
    "Assets",
    "ControlPlane",
    "apiserver_args",
    "die_with_parent",
    "etcd_args",
    "find_assets",
    "free_port",
    "make_certs",
]

log = structlog.get_logger("kuberay_py.envtest.controlplane")

DEFAULT_ASSETS_DIR = "/usr/local/kubebuilder/bin"


@dataclass(frozen=True)
class Assets:
    etcd: str
    kube_apiserver: str
    kubectl: str | None = None


def find_assets(env: Mapping[str, str] | None = None) -> Assets | None:
    """Locate the binaries from ``TEST_ASSET_*`` / ``KUBEBUILDER_ASSETS`` (envtest's variables).

    Returns ``None`` when they are not all present, which selects the built-in server.
    """
    env = os.environ if env is None else env
    folder = env.get("KUBEBUILDER_ASSETS") or ""
    candidates = [folder] if folder else [DEFAULT_ASSETS_DIR] if env is os.environ else []

    def pick(var: str, name: str) -> str | None:
        explicit = env.get(var)
        if explicit:
            return explicit if os.access(explicit, os.X_OK) else None
        for d in candidates:
            p = Path(d) / name
            if p.is_file() and os.access(p, os.X_OK):
                return str(p)
        return None

    etcd = pick("TEST_ASSET_ETCD", "etcd")
    apiserver = pick("TEST_ASSET_KUBE_APISERVER", "kube-apiserver")
    if not etcd or not apiserver:
        return None
    return Assets(etcd, apiserver, pick("TEST_ASSET_KUBECTL", "kubectl"))


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def etcd_args(data_dir: str, client_url: str, *, no_fsync: bool, extra: Sequence[str] = ()) -> list[str]:
    args = [
        f"--data-dir={data_dir}",
        f"--listen-client-urls={client_url}",
        f"--advertise-client-urls={client_url}",
        "--listen-peer-urls=http://localhost:0",
    ]
    if no_fsync:
        args.append("--unsafe-no-fsync=true")
    return _merge(args, extra)


def apiserver_args(
    *,
    etcd_url: str,
    cert_dir: str,
    host: str,
    port: int,
    client_ca: str,
    audit: Sequence[str] = (),
    extra: Sequence[str] = (),
) -> list[str]:
    """controller-runtime's defaults, then ``audit`` (:func:`~.audit.audit_args`: the request log
    of real mode, a default so that it is on for every control plane), then ``extra``."""
    args = [
        f"--advertise-address={host}",
        f"--bind-address={host}",
        f"--secure-port={port}",
        f"--etcd-servers={etcd_url}",
        f"--cert-dir={cert_dir}",
        f"--tls-cert-file={cert_dir}/apiserver.crt",
        f"--tls-private-key-file={cert_dir}/apiserver.key",
        "--service-cluster-ip-range=10.0.0.0/24",
        "--allow-privileged=true",
        "--disable-admission-plugins=ServiceAccount",
        "--authorization-mode=RBAC",
        f"--client-ca-file={client_ca}",
        f"--service-account-issuer=https://{host}:{port}/",
        f"--service-account-key-file={cert_dir}/sa-signer.pub",
        f"--service-account-signing-key-file={cert_dir}/sa-signer.key",
        *audit,
    ]
    return _merge(args, extra)


def _merge(defaults: list[str], extra: Sequence[str]) -> list[str]:
    """Pass-through flags override defaults with the same name (envtest's ``Configure()``)."""
    names = {e.split("=", 1)[0] for e in extra}
    return [a for a in defaults if a.split("=", 1)[0] not in names] + list(extra)


@dataclass(frozen=True)
class Certs:
    ca_cert: str
    serving_cert: str
    serving_key: str
    client_cert: str
    client_key: str
    sa_key: str
    sa_pub: str


def make_certs(cert_dir: str, host: str = "127.0.0.1") -> Certs:
    """A throw-away CA, a serving certificate for ``host``/localhost, an admin client certificate
    (``O=system:masters``) and the service-account signing key pair."""
    d = Path(cert_dir)
    d.mkdir(parents=True, exist_ok=True)
    ca_key, ca_crt = d / "ca.key", d / "ca.crt"
    self_signed_ca(ca_key, ca_crt, "envtest-ca", RSA_KEY)
    ext = d / "serving.ext"
    ext.write_text(f"subjectAltName={serving_san(host)}\nextendedKeyUsage=serverAuth\n")
    client_ext = d / "client.ext"
    client_ext.write_text("extendedKeyUsage=clientAuth\n")
    ca = (ca_crt, ca_key)
    serving_crt, serving_key = sign(ca, d, "apiserver", "/CN=localhost", ext, RSA_KEY)
    client_crt, client_key = sign(ca, d, "admin", "/O=system:masters/CN=envtest-admin", client_ext, RSA_KEY)
    sa_key, sa_pub = str(d / "sa-signer.key"), str(d / "sa-signer.pub")
    openssl("genrsa", "-out", sa_key, "2048")
    openssl("rsa", "-in", sa_key, "-pubout", "-out", sa_pub)
    return Certs(
        str(ca_crt), str(serving_crt), str(serving_key), str(client_crt), str(client_key), sa_key, sa_pub
    )


_PR_SET_PDEATHSIG = 1


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get SIGKILL when this process dies (Linux only).

    Runs in the forked child before exec. If the parent already died in between (the child was
    re-parented), the child kills itself rather than run unowned.
    """
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    parent = os.getpid()

    def preexec() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


def _signal_group(proc: asyncio.subprocess.Process, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)  # the child leads its own group (start_new_session)


def etcd_supports_no_fsync(etcd: str) -> bool:
    try:
        out = subprocess.run([etcd, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "unsafe-no-fsync" in (out.stdout + out.stderr)


@dataclass
class ControlPlane:
    assets: Assets
    host: str = "127.0.0.1"
    apiserver_extra: Sequence[str] = ()
    etcd_extra: Sequence[str] = ()
    start_timeout: float = float(os.environ.get("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT", "60").rstrip("s"))
    stop_timeout: float = float(os.environ.get("KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT", "20").rstrip("s"))
    attach_output: bool = os.environ.get("KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT", "") == "true"
    url: str = ""
    etcd_url: str = ""
    certs: Certs | None = None
    audit_log_path: str = ""  # "" when ``apiserver_extra`` moved the audit log elsewhere
    _dir: str = ""
    _procs: list[asyncio.subprocess.Process] = field(default_factory=list)

    async def start(self) -> None:
        """Start etcd, then kube-apiserver, until ``/readyz``; on any failure nothing is left running."""
        try:
            await self._start()
        except BaseException:
            await asyncio.shield(self.stop())
            raise

    async def _start(self) -> None:
        self._dir = tempfile.mkdtemp(prefix="kuberay-envtest-")
        cert_dir = os.path.join(self._dir, "certs")
        self.certs = await asyncio.to_thread(make_certs, cert_dir, self.host)
        etcd_url = self.etcd_url = f"http://{self.host}:{free_port(self.host)}"
        no_fsync = await asyncio.to_thread(etcd_supports_no_fsync, self.assets.etcd)
        await self._spawn(
            self.assets.etcd,
            etcd_args(os.path.join(self._dir, "etcd"), etcd_url, no_fsync=no_fsync, extra=self.etcd_extra),
        )
        await self._wait_http(f"{etcd_url}/health", None)
        port = free_port(self.host)
        audit = await asyncio.to_thread(audit_args, os.path.join(self._dir, "audit"))
        args = apiserver_args(
            etcd_url=etcd_url,
            cert_dir=cert_dir,
            host=self.host,
            port=port,
            client_ca=self.certs.ca_cert,
            audit=audit,
            extra=self.apiserver_extra,
        )
        await self._spawn(self.assets.kube_apiserver, args)
        ours = next(a for a in audit if a.startswith("--audit-log-path="))
        self.audit_log_path = ours.split("=", 1)[1] if ours in args else ""
        self.url = f"https://{self.host}:{port}"
        await self._wait_http(f"{self.url}/readyz", self.client_ssl())

    @property
    def pids(self) -> list[int]:
        """The running etcd and kube-apiserver, in start order."""
        return [p.pid for p in self._procs if p.returncode is None]

    def client_ssl(self) -> ssl.SSLContext:
        """TLS for the admin client: the generated CA and the system:masters client certificate."""
        assert self.certs is not None
        ctx = ssl.create_default_context(cafile=self.certs.ca_cert)
        ctx.load_cert_chain(self.certs.client_cert, self.certs.client_key)
        return ctx

    async def _spawn(self, binary: str, args: list[str]) -> None:
        out = None if self.attach_output else asyncio.subprocess.DEVNULL
        log.info("envtest.spawn", binary=binary, args=args)
        proc = await asyncio.create_subprocess_exec(
            binary,
            *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,  # its own process group: stop() signals helpers too
            preexec_fn=die_with_parent(),
        )
        self._procs.append(proc)

    async def _wait_http(self, url: str, ctx: ssl.SSLContext | None) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.start_timeout
        async with aiohttp.ClientSession() as session:
            while True:
                for p in self._procs:
                    if p.returncode is not None:
                        raise RuntimeError(
                            f"control plane process exited with {p.returncode} before {url} was ready"
                        )
                with contextlib.suppress(aiohttp.ClientError, OSError):
                    async with session.get(
                        url, ssl=ctx if ctx is not None else False, timeout=aiohttp.ClientTimeout(total=2)
                    ) as r:
                        if r.status == 200:
                            return
                if loop.time() > deadline:
                    raise TimeoutError(f"timeout waiting for {url}")
                await asyncio.sleep(0.1)

    async def stop(self) -> None:
        """SIGTERM each process group (kube-apiserver first), SIGKILL what is left after ``stop_timeout``."""
        for proc in reversed(self._procs):
            if proc.returncode is None:
                _signal_group(proc, signal.SIGTERM)
                try:
                    await asyncio.wait_for(proc.wait(), self.stop_timeout)
                except TimeoutError:
                    log.info("envtest.kill", pid=proc.pid, after_seconds=self.stop_timeout)
            _signal_group(proc, signal.SIGKILL)  # the leader, if still there, and any helper
            if proc.returncode is None:
                await proc.wait()
        self._procs.clear()
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = ""
