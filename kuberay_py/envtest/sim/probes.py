"""Running one probe attempt for real against a Pod's address.

The kubelet's rules (``pkg/kubelet/prober``): ``httpGet`` succeeds on a status in [200, 400);
``tcpSocket`` succeeds when a connection opens; ``exec`` succeeds on exit status 0. Each attempt is
bounded by ``timeoutSeconds`` (default 1). The exec form is interpreted (see :mod:`.exec_probe`).

The bound must pass on the simulator's clock *and* in real time (:func:`deadline`). On a real
clock that is plain ``timeoutSeconds``. On a test's FakeClock an attempt is never cut short by a
loaded machine alone (a slow answer that the test never advanced time over would otherwise fail a
probe whose next period never comes, leaving the Pod unready for good), nor by a FakeClock step
alone (an attempt in flight still gets its real ``timeoutSeconds``).
A probe the simulator cannot run (gRPC, an unparseable script, a port name the container does not
declare) fails with the reason, as the kubelet reports a probe error.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp

from kuberay_py.clock import Clock, RealClock
from kuberay_py.envtest.sim.exec_probe import ExecParseError, ExecScript, FetchResult, parse_exec_command

__all__ = ["ProbeOutcome", "deadline", "resolve_port", "run_probe"]

_MAX_BODY = 10 * 1024  # the kubelet reads at most 10 KiB of a probe's response body


@dataclass(frozen=True)
class ProbeOutcome:
    success: bool
    message: str = ""


def resolve_port(port: Any, container: dict[str, Any]) -> int | None:
    """An int-or-string port: a number, a numeric string, or the name of one of the container's ports."""
    if isinstance(port, int):
        return port
    if isinstance(port, str):
        if port.isdigit():
            return int(port)
        for p in container.get("ports") or []:
            if p.get("name") == port:
                value = p.get("containerPort")
                return value if isinstance(value, int) else None
    return None


@contextlib.asynccontextmanager
async def deadline(clock: Clock, seconds: float) -> AsyncIterator[None]:
    """Like ``asyncio.timeout(seconds)``, but it expires only once ``seconds`` also passed on ``clock``."""
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(None) as bound:

        async def expire() -> None:
            await asyncio.gather(asyncio.sleep(seconds), clock.sleep(seconds))
            bound.reschedule(loop.time())

        timer = asyncio.ensure_future(expire())
        try:
            yield
        finally:
            timer.cancel()


@functools.lru_cache(maxsize=4096)
def _parsed(command: tuple[str, ...]) -> ExecScript:
    """Probe commands repeat every period; parse each distinct one once."""
    return parse_exec_command(list(command))


async def fetch(
    session: aiohttp.ClientSession, url: str, timeout: float, clock: Clock | None = None
) -> FetchResult:
    """One GET; never raises for network trouble (that is a probe failure, not a bug)."""
    try:
        async with deadline(clock or RealClock(), timeout):
            async with session.get(url, allow_redirects=True) as resp:
                body = await resp.content.read(_MAX_BODY)
                return FetchResult(resp.status, body)
    except TimeoutError:
        return FetchResult(None, error=f"timeout after {timeout:g}s")
    except (aiohttp.ClientError, OSError) as exc:
        return FetchResult(None, error=str(exc) or type(exc).__name__)


async def run_probe(
    probe: dict[str, Any],
    container: dict[str, Any],
    pod_ip: str,
    session: aiohttp.ClientSession,
    clock: Clock | None = None,
) -> ProbeOutcome:
    timeout = float(probe.get("timeoutSeconds") or 1)
    clock = clock or RealClock()
    if "httpGet" in probe:
        return await _http_get(probe["httpGet"], container, pod_ip, session, timeout, clock)
    if "tcpSocket" in probe:
        return await _tcp(probe["tcpSocket"], container, pod_ip, timeout, clock)
    if "exec" in probe:
        try:
            script = _parsed(tuple((probe["exec"] or {}).get("command") or ()))
        except ExecParseError as exc:
            return ProbeOutcome(False, f"exec probe not interpretable: {exc}")

        async def _fetch(url: str, t: float) -> FetchResult:
            return await fetch(session, url, t, clock)

        try:
            async with deadline(clock, timeout):
                status, reason = await script.run(_fetch, pod_ip, timeout)
        except TimeoutError:
            return ProbeOutcome(False, f"command timed out after {timeout:g}s")
        return ProbeOutcome(status == 0, reason if status else "")
    if "grpc" in probe:
        return ProbeOutcome(False, "grpc probes are not supported by the simulator")
    return ProbeOutcome(False, "probe has no handler")


async def _http_get(
    spec: dict[str, Any],
    container: dict[str, Any],
    pod_ip: str,
    session: aiohttp.ClientSession,
    timeout: float,
    clock: Clock,
) -> ProbeOutcome:
    port = resolve_port(spec.get("port"), container)
    if port is None:
        return ProbeOutcome(False, f"port {spec.get('port')!r} not found in container ports")
    scheme = str(spec.get("scheme") or "HTTP").lower()
    host = spec.get("host") or pod_ip
    path = spec.get("path") or "/"
    if not path.startswith("/"):
        path = "/" + path
    url = f"{scheme}://{host}:{port}{path}"
    # The kubelet's defaults, which user headers may override (prober/http.go).
    headers = {"User-Agent": "kube-probe/1.31", "Accept": "*/*"}
    headers.update({h["name"]: h.get("value", "") for h in spec.get("httpHeaders") or [] if h.get("name")})
    try:
        async with deadline(clock, timeout):
            async with session.get(url, headers=headers, ssl=False) as resp:
                await resp.content.read(_MAX_BODY)
                if 200 <= resp.status < 400:
                    return ProbeOutcome(True)
                return ProbeOutcome(False, f"HTTP probe failed with statuscode: {resp.status}")
    except TimeoutError:
        return ProbeOutcome(False, f"Get {url}: timeout after {timeout:g}s")
    except (aiohttp.ClientError, OSError) as exc:
        return ProbeOutcome(False, f"Get {url}: {exc}")


async def _tcp(
    spec: dict[str, Any], container: dict[str, Any], pod_ip: str, timeout: float, clock: Clock
) -> ProbeOutcome:
    port = resolve_port(spec.get("port"), container)
    if port is None:
        return ProbeOutcome(False, f"port {spec.get('port')!r} not found in container ports")
    host = spec.get("host") or pod_ip
    try:
        async with deadline(clock, timeout):
            _, writer = await asyncio.open_connection(host, port)
    except TimeoutError:
        return ProbeOutcome(False, f"dial tcp {host}:{port}: i/o timeout")
    except OSError as exc:
        return ProbeOutcome(False, f"dial tcp {host}:{port}: {exc}")
    writer.close()
    try:
        await writer.wait_closed()
    except OSError:
        pass
    return ProbeOutcome(True)
