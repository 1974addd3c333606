"""Structured logging for the operator: one configuration, key-value lines, per-reconcile context.

Every line a reconcile writes must say which object it is about without each call site repeating
it, so the controller binds ``controller``, ``namespace``, ``name`` and ``reconcile_id`` with
:mod:`structlog.contextvars` and :func:`structlog.contextvars.merge_contextvars` runs *first* in the
processor chain (a later processor could otherwise drop or shadow them). Context variables follow
asyncio tasks, so concurrent reconciles never see each other's keys.

JSON is the default because log pipelines parse it; ``console`` is for people at a terminal.
Loggers are cached on first use (structlog's main performance lever), which is why
:func:`configure` must run before the first line is logged if the level or format should differ
from the defaults.

Example::

    configure(fmt="console", level="debug")
    log = get_logger(__name__)
    with structlog.contextvars.bound_contextvars(controller="raycluster", name="rc"):
        log.info("reconciling", phase="pods")
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Literal, TextIO, cast

import orjson
import structlog
from structlog._config import BoundLoggerLazyProxy

__all__ = ["LEVELS", "configure", "get_logger"]

Format = Literal["json", "console"]

LEVELS: dict[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}


def _orjson_dumps(obj: Any, default: Any = None) -> str:
    # orjson returns bytes; structlog's JSONRenderer wants text when writing to a text stream.
    # OPT_NON_STR_KEYS keeps dicts with int keys (e.g. port maps) loggable instead of raising.
    return orjson.dumps(obj, default=default or str, option=orjson.OPT_NON_STR_KEYS).decode()


class _CurrentStderr:
    """Writes to whatever ``sys.stderr`` is *now*, not what it was at ``configure()`` time.

    Loggers are cached on first use; binding the stderr object of that moment would keep writing
    to a replaced (possibly closed) stream, e.g. after a test harness swapped ``sys.stderr``.
    """

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def _shared_processors() -> list[structlog.typing.Processor]:
    return [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]


def configure(fmt: str = "json", level: str | int = "info", *, stream: TextIO | None = None) -> None:
    """Configure structlog (and route stdlib logging through the same level and stream).

    ``fmt`` is ``"json"`` or ``"console"``; ``level`` a name (``debug`` … ``critical``) or a
    :mod:`logging` number. Anything else raises :class:`ValueError` naming the accepted values,
    because a typo in ``--log-level`` must not silently log at the wrong level.
    """
    if fmt not in ("json", "console"):
        raise ValueError(f"unknown log format {fmt!r}: expected 'json' or 'console'")
    if isinstance(level, str):
        if level.lower() not in LEVELS:
            raise ValueError(f"unknown log level {level!r}: expected one of {sorted(set(LEVELS))}")
        numeric = LEVELS[level.lower()]
    else:
        numeric = int(level)
    out: TextIO = stream if stream is not None else cast(TextIO, _CurrentStderr())

    tail: list[structlog.typing.Processor]
    if fmt == "json":
        # The traceback becomes one string field, so a failing reconcile stays one JSON line.
        tail = [structlog.processors.format_exc_info,
                structlog.processors.JSONRenderer(serializer=_orjson_dumps)]
    else:
        tail = [structlog.dev.ConsoleRenderer(colors=False)]  # renders exc_info itself

    structlog.reset_defaults()
    structlog.configure(
        processors=[*_shared_processors(), *tail],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=True,
    )
    # Libraries (aiohttp, kubernetes_asyncio) log through the stdlib: same level, same stream.
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_kuberay_py", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(out)
    handler._kuberay_py = True  # type: ignore[attr-defined]
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    root.addHandler(handler)
    root.setLevel(numeric)


def get_logger(name: str | None = None, **initial: Any) -> structlog.typing.FilteringBoundLogger:
    """A logger whose lines carry ``logger=name`` plus any initial key-value pairs.

    It stays lazy until first used, so a module-level ``log = get_logger(__name__)`` picks up the
    configuration :func:`configure` installs later. (``structlog.get_logger(logger=...)`` would
    clash with ``wrap_logger``'s own ``logger`` parameter, and binding eagerly would freeze the
    defaults, hence the proxy built here.)
    """
    if name is not None:
        initial.setdefault("logger", name)
    return cast(structlog.typing.FilteringBoundLogger, BoundLoggerLazyProxy(None, initial_values=initial))
