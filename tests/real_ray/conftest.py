"""A real ``ray[serve]`` head standing in for a simulated head Pod's Ray.

Ray binds 127.0.0.1 (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, see ray-serve-behaviour.md §2) while
the simulator gives the head Pod its own loopback address; small TCP forwarders on the Pod address
carry the dashboard, agent and Serve ports to the real processes, so the kubelet's exec probes, the
operator's dashboard calls and the head-proxy checks all reach the real Ray through the Pod's IP.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

APP_DIR = Path(__file__).resolve().parent / "app"
# The head Pod's probes and the operator use the default dashboard, agent and Serve ports; the GCS
# and Ray client ports are internal to Ray, so they take whatever is free.
RAY_PORTS = {"dashboard": 8265, "agent": 52365}
SERVE_PORT = 8000


def ray_available() -> str | None:
    """Why the real-Ray test cannot run here, or None."""
    try:
        import ray
        import ray.serve  # noqa: F401
    except ImportError as exc:
        return f"ray[serve] is not installed ({exc}); install the 'ray' extra"
    for port in [*RAY_PORTS.values(), SERVE_PORT]:
        with socket.socket() as s:
            # As Ray's servers do: connections of an earlier head in TIME_WAIT do not hold the port.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return f"127.0.0.1:{port} is in use; the real Ray head needs it"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Forwarder:
    """One listening address forwarded byte for byte to 127.0.0.1 on the same port."""

    def __init__(self, ip: str, port: int) -> None:
        self.ip, self.port = ip, port
        self.server: asyncio.Server | None = None

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._handle, self.ip, self.port, reuse_address=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
        except OSError:
            writer.close()
            return

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                with contextlib.suppress(Exception):
                    dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.server.wait_closed(), 2)


class RealRayHeadRuntime:
    """A PodRuntime: the head Pod's containers are one real ``ray start --head`` on 127.0.0.1."""

    def __init__(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="kr-ray-"))
        self.started = False
        self.forwarders: dict[str, list[_Forwarder]] = {}
        self.env = {
            **os.environ,
            "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
            "PYTHONPATH": os.pathsep.join([str(APP_DIR), os.environ.get("PYTHONPATH", "")]).rstrip(
                os.pathsep
            ),
            "RAY_USAGE_STATS_ENABLED": "0",
            # A job's ``python`` is Ray's own interpreter, as in the rayproject/ray image.
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        }
        self.ray_bin = str(Path(sys.executable).with_name("ray"))
        self.proc: asyncio.subprocess.Process | None = None
        # (namespace, Secret name, key) -> value: how a token-auth head Pod's RAY_AUTH_TOKEN
        # Secret reaches the real Ray, as the kubelet would resolve it.
        self.secret_value: Callable[[str, str, str], Awaitable[str | None]] | None = None

    async def _token_auth_env(self, pod: dict[str, Any]) -> dict[str, str]:
        """RAY_AUTH_MODE / RAY_AUTH_TOKEN of the head Pod's Ray container, the Secret resolved."""
        container = pod["spec"]["containers"][0]
        env = {e["name"]: e for e in container.get("env") or []}
        if (env.get("RAY_AUTH_MODE") or {}).get("value") != "token":
            return {}
        token = env.get("RAY_AUTH_TOKEN") or {}
        ref = (token.get("valueFrom") or {}).get("secretKeyRef")
        value = token.get("value")
        if ref and self.secret_value is not None:
            value = await self.secret_value(pod["metadata"]["namespace"], ref["name"], ref["key"])
        if not value:
            raise RuntimeError("the head Pod asks for token auth but its token cannot be resolved")
        return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": value}

    async def start_head(self) -> None:
        """``ray start --head --block`` as our own child (its own session), ready once the GCS is."""
        self.proc = await asyncio.create_subprocess_exec(
            self.ray_bin,
            "start",
            "--head",
            "--block",
            "--node-ip-address=127.0.0.1",
            f"--port={free_port()}",
            "--dashboard-host=127.0.0.1",
            f"--dashboard-port={RAY_PORTS['dashboard']}",
            f"--dashboard-agent-listen-port={RAY_PORTS['agent']}",
            f"--ray-client-server-port={free_port()}",
            "--num-cpus=1",
            "--object-store-memory=200000000",
            "--disable-usage-stats",
            f"--temp-dir={self.tmp}",
            env=self.env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
        url = f"http://127.0.0.1:{RAY_PORTS['dashboard']}/api/gcs_healthz"
        for _ in range(240):
            if self.proc.returncode is not None:
                raise RuntimeError(f"ray start exited with {self.proc.returncode}")
            with contextlib.suppress(Exception):
                code, body = await http_get(url)
                if code == 200 and "success" in body:
                    return
            await asyncio.sleep(0.5)
        raise RuntimeError("the Ray head did not become healthy within 120 s")

    async def stop_head(self) -> None:
        """SIGTERM to our ``ray start --block`` (it stops its node), then its process group if needed."""
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 60)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()

    async def start(self, pod: dict[str, Any], ip: str) -> None:
        if (pod["metadata"].get("labels") or {}).get("ray.io/node-type") != "head":
            return
        if not self.started:
            self.env.update(await self._token_auth_env(pod))
            await self.start_head()
            self.started = True
        forwarders = [_Forwarder(ip, p) for p in (RAY_PORTS["dashboard"], RAY_PORTS["agent"], SERVE_PORT)]
        for f in forwarders:
            await f.start()
        self.forwarders[ip] = forwarders

    async def stop(self, pod: dict[str, Any], ip: str) -> None:
        for f in self.forwarders.pop(ip, []):
            await f.close()

    async def shutdown(self) -> None:
        for ip in list(self.forwarders):
            for f in self.forwarders.pop(ip):
                await f.close()
        if self.started:
            await self.stop_head()
            self.started = False
        shutil.rmtree(self.tmp, ignore_errors=True)


@pytest.fixture
async def real_ray_runtime() -> AsyncIterator[RealRayHeadRuntime]:
    reason = ray_available()
    if reason:
        pytest.skip(reason)
    runtime = RealRayHeadRuntime()
    try:
        yield runtime
    finally:
        await runtime.shutdown()


async def http_get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as s, s.get(url, timeout=aiohttp.ClientTimeout(total=5)) as r:
        return r.status, await r.text()
