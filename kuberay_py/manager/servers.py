"""The manager's HTTP servers: Prometheus ``/metrics`` and the health probes.

Bind addresses use controller-runtime's conventions: ``":8080"`` listens on every interface,
``"127.0.0.1:0"`` or ``":0"`` picks a free port (the bound URL is reported back, which tests and
the demo need), and ``"0"`` or ``""`` disables the server. The servers start before anything
else so a probe never gets "connection refused" from a process that is merely still syncing.
"""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from kuberay_py.log import get_logger
from kuberay_py.metrics import exposition

__all__ = ["HTTPServer", "metrics_app", "parse_bind_address"]

log = get_logger(__name__)


def parse_bind_address(address: str) -> tuple[str, int] | None:
    """``"host:port"`` → ``(host, port)``; ``None`` when disabled. Raises ValueError on nonsense."""
    if address in ("", "0"):
        return None
    host, sep, port_text = address.rpartition(":")
    if not sep:
        raise ValueError(f"bind address {address!r} must look like ':8080', '127.0.0.1:0' or '0' (disabled)")
    host = host.strip("[]")
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"bind address {address!r} has a non-numeric port") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"bind address {address!r} has a port outside 0..65535")
    return host, port


async def _metrics(_: web.Request) -> web.Response:
    # Collected on the loop, not in a thread: some collectors read the informer cache at scrape time.
    body = exposition()
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def metrics_app() -> web.Application:
    app = web.Application()
    app.router.add_get("/metrics", _metrics)
    return app


class HTTPServer:
    """One aiohttp application on one address; :attr:`url` is the actually bound base URL."""

    def __init__(self, name: str, app: web.Application, address: str) -> None:
        self.name = name
        self.app = app
        self.bind = parse_bind_address(address)
        self.url: str | None = None
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        if self.bind is None:
            return
        host, port = self.bind
        self._runner = web.AppRunner(self.app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host or None, port, reuse_address=True)
        try:
            await site.start()
        except OSError as err:
            await self._runner.cleanup()
            self._runner = None
            raise OSError(
                err.errno, f"{self.name} server cannot listen on {host}:{port}: {err.strerror}"
            ) from err
        bound_port = port
        for addr in self._runner.addresses:
            if isinstance(addr, tuple) and len(addr) >= 2:
                bound_port = int(addr[1])
                break
        url_host = host if host not in ("", "0.0.0.0", "::") else "127.0.0.1"
        if ":" in url_host:
            url_host = f"[{url_host}]"
        self.url = f"http://{url_host}:{bound_port}"
        log.info("serving", server=self.name, url=self.url, bind=f"{host}:{port}")

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
