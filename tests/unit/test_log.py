import io
import logging
from collections.abc import Iterator

import orjson
import pytest
import structlog

from kuberay_py.log import configure, get_logger


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    yield
    structlog.reset_defaults()
    structlog.contextvars.clear_contextvars()
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, "_kuberay_py", False):
            root.removeHandler(h)


def _lines(buf: io.StringIO) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in buf.getvalue().splitlines() if line]


def test_json_line_carries_bound_reconcile_context_and_iso_timestamp() -> None:
    buf = io.StringIO()
    configure(fmt="json", level="info", stream=buf)
    log = get_logger("test.ctx")
    with structlog.contextvars.bound_contextvars(
        controller="raycluster", namespace="ns1", name="rc", reconcile_id="abc-123"
    ):
        log.info("reconciling", phase="pods")
    log.info("outside")
    first, second = _lines(buf)
    assert first["event"] == "reconciling"
    assert first["controller"] == "raycluster"
    assert first["namespace"] == "ns1"
    assert first["name"] == "rc"
    assert first["reconcile_id"] == "abc-123"
    assert first["phase"] == "pods"
    assert first["level"] == "info"
    assert first["logger"] == "test.ctx"
    ts = str(first["timestamp"])
    assert ts.startswith("20") and "T" in ts and ts.endswith("Z")
    assert "controller" not in second  # context does not leak past the block


def test_level_filters_lines_below_it() -> None:
    buf = io.StringIO()
    configure(fmt="json", level="warning", stream=buf)
    log = get_logger("test.level")
    log.info("hidden")
    log.warning("shown")
    assert [line["event"] for line in _lines(buf)] == ["shown"]


def test_exception_traceback_is_rendered_into_the_json_line() -> None:
    buf = io.StringIO()
    configure(fmt="json", stream=buf)
    log = get_logger("test.exc")
    try:
        raise RuntimeError("boom in reconcile")
    except RuntimeError:
        log.exception("reconciler error")
    (line,) = _lines(buf)
    assert line["level"] == "error"
    assert "Traceback" in str(line["exception"])
    assert "RuntimeError: boom in reconcile" in str(line["exception"])


def test_console_format_is_human_readable_not_json() -> None:
    buf = io.StringIO()
    configure(fmt="console", level="debug", stream=buf)
    get_logger("test.console").debug("hello", key="value")
    out = buf.getvalue()
    assert "hello" in out and "key=value" in out
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(out)


def test_stdlib_logging_goes_to_the_same_stream_at_the_same_level() -> None:
    buf = io.StringIO()
    configure(fmt="json", level="warning", stream=buf)
    logging.getLogger("aiohttp.test").info("hidden")
    logging.getLogger("aiohttp.test").warning("library warning")
    out = buf.getvalue()
    assert "library warning" in out and "hidden" not in out


def test_unencodable_values_do_not_break_the_line() -> None:
    buf = io.StringIO()
    configure(fmt="json", stream=buf)
    get_logger("test.values").info("odd", ports={8265: "dashboard"}, obj=object())
    (line,) = _lines(buf)
    assert line["ports"] == {"8265": "dashboard"}
    assert str(line["obj"]).startswith("<object object")


@pytest.mark.parametrize(("fmt", "level"), [("xml", "info"), ("json", "verbose")])
def test_bad_format_or_level_is_a_clear_error(fmt: str, level: str) -> None:
    with pytest.raises(ValueError, match="expected"):
        configure(fmt=fmt, level=level)


def test_logger_created_before_configure_follows_the_later_configuration() -> None:
    early = get_logger("test.early", component="x")
    buf = io.StringIO()
    configure(fmt="json", stream=buf)
    early.info("after configure")
    (line,) = _lines(buf)
    assert line["logger"] == "test.early" and line["component"] == "x"


def test_default_stream_follows_the_current_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    configure(fmt="json")
    log = get_logger("test.stderr")
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr("sys.stderr", first)
    log.info("one")
    monkeypatch.setattr("sys.stderr", second)
    log.info("two")
    assert '"one"' in first.getvalue() and '"two"' in second.getvalue()
    assert '"two"' not in first.getvalue()
