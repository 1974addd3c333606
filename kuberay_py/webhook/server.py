"""The admission webhook HTTPS server (controller-runtime's ``webhook.Server``).

Serves each registered handler at its path on ``host:port`` (``:9443`` by default) with the
certificate pair from ``cert_dir`` (``/tmp/k8s-webhook-server/serving-certs/tls.crt|tls.key``,
where the kubebuilder manifests mount the cert-manager Secret), reloaded when the files change.
It starts before the caches and does not wait for leadership: kube-apiserver calls whichever
replica the Service picks, and a ``failurePolicy: Fail`` webhook that is not served blocks every
write of its resources. :meth:`started_checker` is a readiness check that passes once the server
answers TLS handshakes, like controller-runtime's ``StartedChecker``. Stopping lets requests in
flight finish (up to ``shutdown_timeout``) before the listener closes.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from kuberay_py.clock import Clock
from kuberay_py.httpserver import HTTPServer
from kuberay_py.log import get_logger

from .admission import MAX_REQUEST_BYTES, Handler, ReviewError, decode_review, encode_review, errored
from .certwatcher import CertWatcher
from .metrics import REQUEST_LATENCY, REQUEST_TOTAL, REQUESTS_IN_FLIGHT

__all__ = [
    "DEFAULT_CERT_DIR",
    "DEFAULT_PORT",
    "WebhookCertificateError",
    "WebhookServer",
    "WebhookServerOptions",
]

log = get_logger(__name__)

DEFAULT_CERT_DIR = str(Path("/tmp") / "k8s-webhook-server" / "serving-certs")  # controller-runtime's
DEFAULT_PORT = 9443


@dataclass
class WebhookServerOptions:
    """Where to listen and which files hold the serving pair (controller-runtime's defaults)."""

    host: str = ""
    port: int = DEFAULT_PORT
    cert_dir: str = DEFAULT_CERT_DIR
    cert_name: str = "tls.crt"
    key_name: str = "tls.key"
    cert_reload_interval: float = 10.0
    shutdown_timeout: float = 30.0


class WebhookCertificateError(RuntimeError):
    """The serving pair is missing or unusable: the server cannot start."""


class WebhookServer:
    def __init__(self, options: WebhookServerOptions | None = None, *, clock: Clock | None = None) -> None:
        self.options = options or WebhookServerOptions()
        self._clock = clock
        self._handlers: dict[str, Handler] = {}
        self._http: HTTPServer | None = None
        self._watch: asyncio.Task[None] | None = None
        self.certs: CertWatcher | None = None

    # -- registration -----------------------------------------------------------------------------

    def register(self, path: str, handler: Handler) -> None:
        """Serve ``handler`` at ``path``; paths are unique, as in controller-runtime."""
        if not path.startswith("/"):
            raise ValueError(f"webhook path {path!r} must start with '/'")
        if path in self._handlers:
            raise ValueError(f"can't register duplicate path: {path}")
        if self._http is not None:
            raise RuntimeError("register webhooks before the server starts")
        self._handlers[path] = handler

    @property
    def paths(self) -> list[str]:
        return sorted(self._handlers)

    # -- serving ----------------------------------------------------------------------------------

    def _app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_REQUEST_BYTES)
        for path, handler in self._handlers.items():
            app.router.add_post(path, self._instrumented(path, handler))
        return app

    def _instrumented(
        self, path: str, handler: Handler
    ) -> Callable[[web.Request], Coroutine[Any, Any, web.Response]]:
        latency, total, in_flight = (
            REQUEST_LATENCY.labels(webhook=path),
            REQUEST_TOTAL,
            REQUESTS_IN_FLIGHT.labels(webhook=path),
        )

        async def serve(request: web.Request) -> web.Response:
            start = time.perf_counter()
            in_flight.inc()
            status = 500
            try:
                response = await self._review(request, handler)
                status = response.status
                return response
            finally:
                in_flight.dec()
                latency.observe(time.perf_counter() - start)
                total.labels(webhook=path, code=str(status)).inc()

        return serve

    async def _review(self, request: web.Request, handler: Handler) -> web.Response:
        try:
            try:
                body = await request.read()
            except web.HTTPRequestEntityTooLarge:
                raise ReviewError(
                    413, f"request entity is too large; limit is {MAX_REQUEST_BYTES} bytes"
                ) from None
            req = decode_review(body, request.content_type if request.headers.get("Content-Type") else "")
        except ReviewError as err:
            log.error("bad admission request", path=request.path, error=str(err))
            return _review_response(encode_review(errored(err.code, str(err))))
        try:
            response = await handler(req)
        except Exception as err:  # a handler bug is an errored response, not a dropped connection
            log.error("admission handler failed", path=request.path, uid=req.uid, exc_info=err)
            response = errored(500, str(err))
        response.uid = req.uid
        return _review_response(encode_review(response, req.api_version))

    async def start(self) -> None:
        opts = self.options
        cert_dir = Path(opts.cert_dir)
        self.certs = CertWatcher(
            cert_dir / opts.cert_name,
            cert_dir / opts.key_name,
            interval=opts.cert_reload_interval,
            clock=self._clock,
        )
        try:
            self.certs.load()
        except (OSError, ssl.SSLError) as err:
            raise WebhookCertificateError(
                f"webhook server cannot load its serving certificate ({err}); it needs {opts.cert_name} and "
                f"{opts.key_name} in {opts.cert_dir} (docs/webhooks.md)"
            ) from err
        host = f"[{opts.host}]" if ":" in opts.host else opts.host
        http = HTTPServer(
            "webhook",
            self._app(),
            f"{host}:{opts.port}",
            ssl_context=self.certs.context,
            shutdown_timeout=opts.shutdown_timeout,
        )
        await http.start()  # OSError "webhook server cannot listen on ..." when the port is taken
        self._http = http
        self._watch = asyncio.create_task(self.certs.watch(), name="webhook-certwatcher")
        log.info(
            "serving webhook server", host=opts.host, port=self.port, cert_dir=opts.cert_dir, paths=self.paths
        )

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            await asyncio.gather(self._watch, return_exceptions=True)
            self._watch = None
        if self._http is not None:
            log.info("shutting down webhook server")
            await self._http.stop()  # stops accepting, lets requests in flight finish
            self._http = None

    @property
    def port(self) -> int | None:
        """The bound port once serving (``port=0`` picks one)."""
        return None if self._http is None else self._http.port

    @property
    def url(self) -> str | None:
        """``https://127.0.0.1:<port>`` once serving (for tests and the envtest install options)."""
        return None if self._http is None else self._http.url

    def started_checker(self) -> Callable[[], Coroutine[Any, Any, None]]:
        """A readiness check: passes once a TLS handshake with the server succeeds."""

        async def check() -> None:
            http = self._http
            if http is None or http.host is None:
                raise RuntimeError("webhook server has not been started yet")
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE  # serving at all is the question, not who trusts the cert
            try:
                _, writer = await asyncio.wait_for(asyncio.open_connection(http.host, http.port, ssl=ctx), 10)
            except (TimeoutError, OSError) as err:
                raise RuntimeError(f"webhook server is not reachable: {err}") from err
            writer.close()
            try:
                await writer.wait_closed()
            except (OSError, ssl.SSLError):
                pass

        return check


def _review_response(body: bytes) -> web.Response:
    return web.Response(body=body, status=200, content_type="application/json")
