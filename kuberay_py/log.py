"""Structured logging for the operator: one configuration, key-value lines, per-reconcile context.

Every line a reconcile writes must say which object it is about without each call site repeating
it, so the controller binds ``controller``, ``namespace``, ``name`` and ``reconcile_id`` with
:mod:`structlog.contextvars` and :func:`structlog.contextvars.merge_contextvars` runs *first* in the
processor chain (a later processor could otherwise drop or shadow them). Context variables follow
asyncio tasks, so concurrent reconciles never see each other's keys.

JSON is the default because log pipelines parse it; ``console`` is for people at a terminal.
With ``file_path`` every line is also written to that file (KubeRay's ``--log-file-path``), in its
own format, at info and above whatever the stream's level (KubeRay's file core is fixed at info),
rotated at 500 MB with 10 old files kept (KubeRay's lumberjack settings).
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
import logging.handlers
import sys
from pathlib import Path
from typing import Any, Literal, TextIO, cast

import orjson
import structlog
from structlog._config import BoundLoggerLazyProxy
from structlog.typing import EventDict

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


FILE_MAX_BYTES = 500 * 1024 * 1024
FILE_BACKUPS = 10


def _level_number(level: str | int) -> int:
    if isinstance(level, str):
        if level.lower() not in LEVELS:
            raise ValueError(f"unknown log level {level!r}: expected one of {sorted(set(LEVELS))}")
        return LEVELS[level.lower()]
    return int(level)


def _renderers(fmt: str) -> list[structlog.typing.Processor]:
    if fmt == "json":
        # The traceback becomes one string field, so a failing reconcile stays one JSON line.
        return [
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(serializer=_orjson_dumps),
        ]
    return [structlog.dev.ConsoleRenderer(colors=False)]  # renders exc_info itself


class _StackFrom:
    """Adds the call stack to events at or above a level (controller-runtime's ``--zap-stacktrace-level``)."""

    def __init__(self, level: int) -> None:
        self.level = level

    def __call__(self, _logger: Any, _method: str, event: EventDict) -> EventDict:
        if LEVELS.get(str(event.get("level", "")), logging.INFO) >= self.level:
            event.setdefault("stack_info", True)
        return event


class _RenderedFormatter(logging.Formatter):
    """Lines structlog already rendered pass through; stdlib records get the plain format."""

    def format(self, record: logging.LogRecord) -> str:
        if getattr(record, "kuberay_rendered", False):
            return str(record.msg)
        return super().format(record)


class _TeeToFile:
    """Writes each event, rendered in the file's format, to the file; drops it below the stream's level.

    It runs just before the stream's renderer, so both outputs carry the same keys and timestamp.
    """

    def __init__(self, handler: logging.Handler, fmt: str, file_level: int, stream_level: int) -> None:
        self.handler = handler
        self.renderers = _renderers(fmt)
        self.file_level = file_level
        self.stream_level = stream_level

    def __call__(self, logger: Any, method: str, event: EventDict) -> EventDict:
        level = LEVELS.get(str(event.get("level", "")), logging.INFO)
        if level >= self.file_level:
            rendered: Any = dict(event)
            for processor in self.renderers:
                rendered = processor(logger, method, rendered)
            record = logging.LogRecord("kuberay", level, "", 0, str(rendered), None, None)
            record.kuberay_rendered = True
            self.handler.handle(record)
        if level < self.stream_level:
            raise structlog.DropEvent
        return event


def _open_log_file(path: str) -> logging.Handler:
    """The rotating file handler; raises :class:`OSError` at once if the file cannot be written."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    handler = logging.handlers.RotatingFileHandler(
        path, maxBytes=FILE_MAX_BYTES, backupCount=FILE_BACKUPS, encoding="utf-8"
    )
    handler.setFormatter(_RenderedFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    return handler


def configure(
    fmt: str = "json",
    level: str | int = "info",
    *,
    stream: TextIO | None = None,
    file_path: str | None = None,
    file_fmt: str = "json",
    stacktrace_level: str | int | None = None,
) -> None:
    """Configure structlog (and route stdlib logging through the same level and stream).

    ``fmt`` is ``"json"`` or ``"console"``; ``level`` a name (``debug`` … ``critical``) or a
    :mod:`logging` number. Anything else raises :class:`ValueError` naming the accepted values,
    because a typo in ``--log-level`` must not silently log at the wrong level. ``file_path``
    also writes every line at info or above to that file in ``file_fmt``; a file that cannot be
    opened raises :class:`OSError` here, before anything is logged. ``stacktrace_level`` adds
    the call stack to events at or above it.
    """
    for name in (fmt, file_fmt):
        if name not in ("json", "console"):
            raise ValueError(f"unknown log format {name!r}: expected 'json' or 'console'")
    numeric = _level_number(level)
    out: TextIO = stream if stream is not None else cast(TextIO, _CurrentStderr())
    file_handler = _open_log_file(file_path) if file_path else None

    processors: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if stacktrace_level is not None and stacktrace_level != "":
        processors.append(_StackFrom(_level_number(stacktrace_level)))
    processors.append(structlog.processors.StackInfoRenderer())
    lowest = numeric
    if file_handler is not None:
        lowest = min(numeric, logging.INFO)
        processors.append(_TeeToFile(file_handler, file_fmt, logging.INFO, numeric))

    structlog.reset_defaults()
    structlog.configure(
        processors=[*processors, *_renderers(fmt)],
        wrapper_class=structlog.make_filtering_bound_logger(lowest),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=True,
    )
    # Libraries (aiohttp, kubernetes_asyncio) log through the stdlib: same level, same stream.
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, "_kuberay_py", False):
            root.removeHandler(old)
            old.close()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    handler.setLevel(numeric)
    handlers: list[logging.Handler] = [handler]
    if file_handler is not None:
        file_handler.setLevel(logging.INFO)
        handlers.append(file_handler)
    for h in handlers:
        h._kuberay_py = True  # type: ignore[attr-defined]
        root.addHandler(h)
    root.setLevel(lowest)


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
