"""The suite's rule on skips: a test never skips because a file is missing.

Every input a test reads is in the repository (``tests/fixtures``), so a skip for a missing file
means the test depends on the machine it runs on: in a clone elsewhere it would pass silently
having tested nothing, and the skip count would depend on the clone's directory. This pytest
plugin (loaded by ``tests/conftest.py``) records every skip whose reason speaks of a missing file,
path or fixture, and every skip raised while a ``FileNotFoundError`` was being handled (whatever
its reason says), and fails the session at its end, naming each one. Skips for a missing tool
(``kubectl not installed``), platform or capability keep working; their reasons name the tool.
The static half of the rule (no absolute path, no step out to a sibling ``shared`` folder, no
``skipif(not p.exists())``) is ``tests/unit/test_self_contained.py``.
"""

from __future__ import annotations

import errno
import re
from collections.abc import Generator
from typing import Any

import pytest

# Words and shapes of a reason that blames a file: a path, a data file's name, the fixtures.
_FILE_REASON = re.compile(
    r"no such file|file not found|(?:file|director(?:y|ies)|folder|path|fixtures?|samples?|crds?|"
    r"reference(?: files?)?|golden)\b[^.;]*\b(?:missing|absent|not (?:present|found|there|available)|"
    r"(?:does|do) not exist)"
    r"|\b(?:missing|absent|not present|not found|(?:does|do) not exist)\b[^.;]*\b(?:files?|director(?:y|ies)|"
    r"folder|path|fixtures?|samples?|crds?|reference|golden)\b"
    r"|(?:^|[\s'\"(])(?:/|\.\./|~/)[\w.-]+/"
    r"|[\w-]+\.(?:ya?ml|json|md|txt|csv|toml)\b",
    re.IGNORECASE,
)

_KEY = pytest.StashKey[list[str]]()


def file_reason(reason: str) -> bool:
    """Whether a skip reason blames a missing file (or names a path or data file at all)."""
    return _FILE_REASON.search(reason) is not None


def _missing_file_error(exc: BaseException | None) -> bool:
    """The skip was raised while handling a missing file (directly, or one level down)."""
    for err in (exc, exc.__context__ if exc is not None else None):
        if isinstance(err, FileNotFoundError) or (isinstance(err, OSError) and err.errno == errno.ENOENT):
            return True
    return False


def _reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _record(config: pytest.Config, where: str, reason: str) -> None:
    config.stash.setdefault(_KEY, []).append(f"{where}: {reason}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = _reason(report)
        skipped = call.excinfo.value if call.excinfo is not None else None
        if file_reason(reason) or _missing_file_error(getattr(skipped, "__context__", None)):
            _record(item.config, item.nodeid, reason)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, Any]:
    report = yield
    if report.skipped:
        reason = _reason(report)
        if file_reason(reason):
            _record(collector.config, collector.nodeid, reason)
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    offenders = session.config.stash.get(_KEY, [])
    if not offenders:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = [
        "tests skipped because a file is missing (put the file under tests/fixtures instead):",
        *offenders,
    ]
    if reporter is not None:
        reporter.write_sep("=", "skip policy", red=True)
        for line in lines:
            reporter.write_line(line)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
