"""The manager's Prometheus ``/metrics`` application (the probes install theirs from healthz).

The manager serves both through :class:`kuberay_py.httpserver.HTTPServer` (bind-address
conventions there), before anything else, so a probe never gets "connection refused" from a
process that is merely still syncing.
"""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from kuberay_py.metrics import exposition

__all__ = ["metrics_app"]


async def _metrics(_: web.Request) -> web.Response:
    # Collected on the loop, not in a thread: some collectors read the informer cache at scrape time.
    body = exposition()
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def metrics_app() -> web.Application:
    app = web.Application()
    app.router.add_get("/metrics", _metrics)
    return app
