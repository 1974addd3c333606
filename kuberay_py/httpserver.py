"""One aiohttp application served on one address, for every server the operator runs.

Bind addresses use controller-runtime's conventions: ``":8080"`` listens on every interface,
``"127.0.0.1:0"`` or ``":0"`` picks a free port (the bound URL is reported back, which tests and
the demo need), and ``"0"`` or ``""`` disables the server. The manager's metrics and health
servers and the admission webhook server (HTTPS) all start and stop through :class:`HTTPServer`.
"""

from __future__ import annotations

import ssl

from aiohttp import web

from kuberay_py.log import get_logger

__all__ = ["HTTPServer", "parse_bind_address"]

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


class HTTPServer:
    """One aiohttp application on one address; :attr:`url` is the actually bound base URL.

    With ``ssl_context`` it serves HTTPS (the admission webhooks); ``shutdown_timeout`` bounds how
    long a stop waits for requests in flight.
    """

    def __init__(
        self,
        name: str,
        app: web.Application,
        address: str,
        *,
        ssl_context: ssl.SSLContext | None = None,
        shutdown_timeout: float = 60.0,
    ) -> None:
        self.name = name
        self.app = app
        self.bind = parse_bind_address(address)
        self.ssl_context = ssl_context
        self.shutdown_timeout = shutdown_timeout
        self.host: str | None = None  # where a local client connects (a wildcard bind: 127.0.0.1)
        self.port: int | None = None  # the bound port (a ":0" bind picks one)
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str | None:
        """The bound base URL once started (an IPv6 host in brackets)."""
        if self.host is None or self.port is None:
            return None
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.ssl_context else 'http'}://{host}:{self.port}"

    async def start(self) -> None:
        if self.bind is None:
            return
        host, port = self.bind
        self._runner = web.AppRunner(
            self.app, access_log=None, handle_signals=False, shutdown_timeout=self.shutdown_timeout
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, host or None, port, ssl_context=self.ssl_context, reuse_address=True)
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
        self.host = host if host not in ("", "0.0.0.0", "::") else "127.0.0.1"
        self.port = bound_port
        log.info("serving", server=self.name, url=self.url, bind=f"{host}:{port}")

    async def stop(self) -> None:
        """Stop accepting, let requests in flight finish (up to ``shutdown_timeout``)."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
