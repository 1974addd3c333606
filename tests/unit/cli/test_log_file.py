"""``--log-file-path`` and the encoders: the same events in the stream and the file, each in its format."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import structlog

from kuberay_py.log import configure, get_logger


@pytest.fixture(autouse=True)
def _restore_structlog() -> Iterator[None]:
    yield
    structlog.reset_defaults()
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, "_kuberay_py", False):
            root.removeHandler(h)
            h.close()


def test_json_stream_and_console_file_carry_the_same_events(tmp_path: Path) -> None:
    stream = io.StringIO()
    path = tmp_path / "logs" / "operator.log"  # the directory is created, as lumberjack does
    configure("json", "info", stream=stream, file_path=str(path), file_fmt="console")
    log = get_logger("test.tee")
    log.info("reconciled", name="rc")
    log.warning("slow", seconds=3)
    events = [orjson.loads(line) for line in stream.getvalue().splitlines()]
    assert [e["event"] for e in events] == ["reconciled", "slow"]
    file_lines = path.read_text().splitlines()
    assert len(file_lines) == 2
    assert "reconciled" in file_lines[0] and "name=rc" in file_lines[0] and "[info" in file_lines[0]
    assert "slow" in file_lines[1] and "seconds=3" in file_lines[1]
    with pytest.raises(ValueError):
        orjson.loads(file_lines[0])  # console, not JSON


def test_the_file_gets_info_and_up_whatever_the_stream_level(tmp_path: Path) -> None:
    stream = io.StringIO()
    path = tmp_path / "operator.log"
    configure("console", "error", stream=stream, file_path=str(path), file_fmt="json")
    log = get_logger("test.levels")
    log.debug("hidden")
    log.info("kept-in-file")
    log.error("everywhere")
    logging.getLogger("aiohttp.test").info("from the stdlib")
    assert "kept-in-file" not in stream.getvalue() and "everywhere" in stream.getvalue()
    in_file = path.read_text().splitlines()
    events = [orjson.loads(line)["event"] for line in in_file if line.startswith("{")]
    assert events == ["kept-in-file", "everywhere"]
    assert any("from the stdlib" in line for line in in_file)
    assert "hidden" not in path.read_text()


def test_debug_stream_does_not_put_debug_in_the_file(tmp_path: Path) -> None:
    stream = io.StringIO()
    path = tmp_path / "operator.log"
    configure("json", "debug", stream=stream, file_path=str(path))
    get_logger("t").debug("detail")
    assert "detail" in stream.getvalue() and "detail" not in path.read_text()


def test_stacktrace_level_adds_the_stack_from_that_level(tmp_path: Path) -> None:
    stream = io.StringIO()
    configure("json", "info", stream=stream, stacktrace_level="error")
    log = get_logger("t")
    log.info("plain")
    log.error("with-stack")
    plain, with_stack = (orjson.loads(line) for line in stream.getvalue().splitlines())
    assert "stack" not in plain
    assert "test_stacktrace_level_adds_the_stack_from_that_level" in str(with_stack["stack"])


def test_an_unwritable_log_file_fails_at_configure(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        configure("json", "info", stream=io.StringIO(), file_path=str(tmp_path))  # a directory
    with pytest.raises(ValueError):
        configure("json", "info", stream=io.StringIO(), file_fmt="xml")
