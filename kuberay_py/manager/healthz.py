"""Health probe endpoints with controller-runtime's ``pkg/healthz`` semantics.

Kubelet probes and people both read these, so the output matches controller-runtime's exactly:
200 ``ok`` when every check passes; on failure 500 with one ``[+]name ok`` /
``[-]name failed: reason withheld`` line per check (the reason is withheld because the endpoint
is unauthenticated), ``?verbose`` forces the listing, ``?exclude=name`` skips a check, and
``/healthz/<name>`` runs a single check (404 if unknown). With no checks registered the endpoint
reports a built-in ``ping``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable

from aiohttp import web

from kuberay_py.log import get_logger

__all__ = ["Checker", "HealthChecks", "ping"]

log = get_logger(__name__)

# A check returns normally when healthy and raises (any Exception) with the reason when not.
Checker = Callable[[], None] | Callable[[], Awaitable[None]]


def ping() -> None:
    """Always healthy (controller-runtime's ``healthz.Ping``)."""


class HealthChecks:
    """A named set of checks served under one path (``/healthz`` or ``/readyz``)."""

    def __init__(self, path: str) -> None:
        self.path = "/" + path.strip("/")
        self._checks: dict[str, Checker] = {}

    def add(self, name: str, check: Checker) -> None:
        if not name or "/" in name:
            raise ValueError(f"invalid health check name {name!r}")
        if name in self._checks:
            raise ValueError(f"health check {name!r} is already registered at {self.path}")
        self._checks[name] = check

    def names(self) -> list[str]:
        return sorted(self._checks)

    async def run_one(self, name: str) -> Exception | None:
        try:
            result = self._checks[name]()
            if inspect.isawaitable(result):
                await result
        except Exception as err:
            return err
        return None

    async def healthy(self) -> bool:
        for name in self._checks:
            if await self.run_one(name) is not None:
                return False
        return True

    def install(self, app: web.Application) -> None:
        app.router.add_get(self.path, self._aggregated)
        app.router.add_get(self.path + "/{name}", self._single)

    async def _aggregated(self, request: web.Request) -> web.Response:
        excluded = set(request.query.getall("exclude", []))
        lines: list[str] = []
        failed = False
        checks = dict(self._checks) if self._checks else {"ping": ping}
        for name in sorted(checks):
            if name in excluded:
                excluded.discard(name)
                lines.append(f"[+]{name} excluded: ok")
                continue
            err = await self.run_one(name) if name in self._checks else None
            if err is None:
                lines.append(f"[+]{name} ok")
            else:
                failed = True
                log.info("health check failed", path=self.path, checker=name, error=str(err))
                lines.append(f"[-]{name} failed: reason withheld")
        status = 500 if failed else 200
        if not failed and "verbose" not in request.query:
            return _text("ok", status)
        if excluded:
            quoted = ", ".join(f'"{n}"' for n in sorted(excluded))
            lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}")
        lines.append("healthz check failed" if failed else "healthz check passed")
        return _text("\n".join(lines) + "\n", status)

    async def _single(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in self._checks:
            if name == "ping" and not self._checks:
                return _text("ok", 200)
            return _text("404 page not found\n", 404)
        err = await self.run_one(name)
        if err is not None:
            return _text(f"internal server error: {err}\n", 500)
        return _text("ok", 200)


def _text(body: str, status: int) -> web.Response:
    resp = web.Response(text=body, status=status, content_type="text/plain", charset="utf-8")
    resp.headers["X-Content-Type-Options"] = "nosniff"
    return resp
