"""Interpreting exec probes without running a shell.

Simulated Pods have no filesystem or processes, only network listeners on their address, so an
exec probe cannot be executed. Health probes in practice are tiny shell scripts that fetch a URL
and look for a word in the answer (KubeRay's ``wget ... | grep success && wget ... | grep success``).
This module parses that shape of script and evaluates it as HTTP requests against the Pod's
address, with shell semantics for ``|``, ``&&`` and ``||`` (equal precedence, left to right; a
pipeline's status is its last command's). Anything it cannot interpret is an :class:`ExecParseError`,
which the kubelet reports as a probe failure with the reason, never as a silent success.

Supported commands: ``wget`` (``-q``, ``-O-``/``-O -``, ``-T``/``--timeout``, ``-t``/``--tries``,
``--spider``), ``curl`` (``-s``, ``-f``, ``-S``, ``-m``/``--max-time``, ``-o``), ``grep`` (``-q``,
``-i``, ``-F``, ``-E``, ``-e``), ``true``, ``false``, ``exit N``.
``localhost`` and ``127.0.0.1`` mean the Pod's own address, as inside the Pod's network namespace.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "Command",
    "ExecParseError",
    "ExecScript",
    "Fetch",
    "FetchResult",
    "parse_exec_command",
]

_SHELLS = {"sh", "bash", "/bin/sh", "/bin/bash", "/usr/bin/bash", "/usr/bin/sh"}
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "[::1]", "::1"}


class ExecParseError(ValueError):
    """The probe's command is not a form the simulator can interpret."""


@dataclass(frozen=True)
class FetchResult:
    """What an HTTP GET produced: ``status`` is None when no response came (refused, timeout)."""

    status: int | None
    body: bytes = b""
    error: str = ""


Fetch = Callable[[str, float], Awaitable[FetchResult]]
"""An HTTP GET of an absolute URL with a timeout in seconds."""


@dataclass(frozen=True)
class Command:
    """One simple command of a pipeline."""

    name: str  # "wget", "curl", "grep", "true", "false", "exit"
    url: str = ""
    timeout: float | None = None
    pattern: str = ""
    ignore_case: bool = False
    fixed: bool = False
    exit_code: int = 0
    fail_on_http_error: bool = True  # curl without -f exits 0 on HTTP errors


@dataclass(frozen=True)
class ExecScript:
    """A parsed script: ``pipelines[0] (op pipelines[i])*`` with ops ``&&``, ``||`` and ``;``."""

    pipelines: list[list[Command]]
    ops: list[str] = field(default_factory=list)

    def urls(self) -> list[str]:
        return [c.url for p in self.pipelines for c in p if c.url]

    async def run(self, fetch: Fetch, pod_ip: str, timeout: float) -> tuple[int, str]:
        """Evaluate with shell semantics; returns (exit status, output-or-reason)."""
        status, out = await _run_pipeline(self.pipelines[0], fetch, pod_ip, timeout)
        for op, pipeline in zip(self.ops, self.pipelines[1:], strict=True):
            if op == ";" or (op == "&&" and status == 0) or (op == "||" and status != 0):
                status, out = await _run_pipeline(pipeline, fetch, pod_ip, timeout)
        return status, out


def parse_exec_command(command: list[str]) -> ExecScript:
    """Parse an exec probe's ``command`` array (``["bash", "-c", script]`` or a bare command)."""
    if not command:
        raise ExecParseError("exec probe has an empty command")
    if command[0] in _SHELLS or command[0].rsplit("/", 1)[-1] in {"sh", "bash"}:
        flags = [a for a in command[1:] if a.startswith("-")]
        rest = [a for a in command[1:] if not a.startswith("-")]
        if not any("c" in f.lstrip("-") for f in flags) or not rest:
            raise ExecParseError(f"unsupported shell invocation {command!r}: expected '<shell> -c <script>'")
        return parse_script(rest[0])
    return parse_script(shlex.join(command))


def parse_script(script: str) -> ExecScript:
    lexer = shlex.shlex(script, posix=True, punctuation_chars="|&;")
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError as exc:
        raise ExecParseError(f"cannot tokenize probe script {script!r}: {exc}") from exc
    pipelines: list[list[Command]] = []
    ops: list[str] = []
    current: list[list[str]] = [[]]
    for tok in tokens:
        if tok in {"&&", "||", ";"}:
            pipelines.append(_pipeline(current, script))
            ops.append(tok)
            current = [[]]
        elif tok == "|":
            current.append([])
        elif set(tok) <= {"|", "&", ";"}:
            raise ExecParseError(f"unsupported shell operator {tok!r} in {script!r}")
        else:
            current[-1].append(tok)
    pipelines.append(_pipeline(current, script))
    return ExecScript(pipelines=pipelines, ops=ops)


def _pipeline(words_list: list[list[str]], script: str) -> list[Command]:
    if any(not words for words in words_list):
        raise ExecParseError(f"empty command in probe script {script!r}")
    return [_command(words, script) for words in words_list]


def _command(words: list[str], script: str) -> Command:
    name = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    if name == "wget":
        return _wget(args, script)
    if name == "curl":
        return _curl(args, script)
    if name == "grep":
        return _grep(args, script)
    if name in {"true", ":"}:
        return Command("true")
    if name == "false":
        return Command("false", exit_code=1)
    if name == "exit":
        try:
            return Command("exit", exit_code=int(args[0]) if args else 0)
        except ValueError as exc:
            raise ExecParseError(f"bad exit status in {script!r}") from exc
    raise ExecParseError(f"unsupported command {name!r} in probe script {script!r}")


def _take_value(args: list[str], i: int, script: str) -> tuple[str, int]:
    if i + 1 >= len(args):
        raise ExecParseError(f"option {args[i]!r} needs a value in {script!r}")
    return args[i + 1], i + 2


def _wget(args: list[str], script: str) -> Command:
    url = ""
    timeout: float | None = None
    i = 0
    while i < len(args):
        a = args[i]
        if a in {"-q", "--quiet", "-O-", "--spider", "-nv", "--no-verbose"}:
            i += 1
        elif a in {"-O", "--output-document"}:
            value, i = _take_value(args, i, script)
            if value != "-":
                raise ExecParseError(f"wget output must be '-' in {script!r}")
        elif a in {"-T", "--timeout", "-t", "--tries"}:
            value, i = _take_value(args, i, script)
            if a in {"-T", "--timeout"}:
                timeout = _float(value, script)
        elif a.startswith(("--timeout=", "--tries=", "--output-document=")):
            key, _, value = a.partition("=")
            if key == "--timeout":
                timeout = _float(value, script)
            i += 1
        elif a.startswith("-T") and len(a) > 2:
            timeout = _float(a[2:], script)
            i += 1
        elif a.startswith("-t") and len(a) > 2:
            i += 1
        elif a.startswith("-"):
            raise ExecParseError(f"unsupported wget option {a!r} in {script!r}")
        else:
            url = a
            i += 1
    if not url:
        raise ExecParseError(f"wget without a URL in {script!r}")
    return Command("wget", url=_check_url(url, script), timeout=timeout)


def _curl(args: list[str], script: str) -> Command:
    url = ""
    timeout: float | None = None
    fail = False
    i = 0
    while i < len(args):
        a = args[i]
        if a in {"-m", "--max-time", "--connect-timeout", "-o", "--output"}:
            value, i = _take_value(args, i, script)
            if a in {"-m", "--max-time"}:
                timeout = _float(value, script)
        elif a.startswith("--") and a not in {"--fail", "--silent", "--show-error"}:
            raise ExecParseError(f"unsupported curl option {a!r} in {script!r}")
        elif a.startswith("-") and len(a) > 1:
            letters = a.lstrip("-") if not a.startswith("--") else ""
            if a == "--fail" or "f" in letters:
                fail = True
            if letters and not set(letters) <= {"f", "s", "S", "L"}:
                raise ExecParseError(f"unsupported curl option {a!r} in {script!r}")
            i += 1
        else:
            url = a
            i += 1
    if not url:
        raise ExecParseError(f"curl without a URL in {script!r}")
    return Command("curl", url=_check_url(url, script), timeout=timeout, fail_on_http_error=fail)


def _grep(args: list[str], script: str) -> Command:
    pattern: str | None = None
    ignore_case = fixed = False
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-e":
            pattern, i = _take_value(args, i, script)
        elif a.startswith("-") and len(a) > 1 and pattern is None:
            for letter in a[1:]:
                if letter == "i":
                    ignore_case = True
                elif letter == "F":
                    fixed = True
                elif letter not in {"q", "E", "s"}:
                    raise ExecParseError(f"unsupported grep option -{letter} in {script!r}")
            i += 1
        elif pattern is None:
            pattern = a
            i += 1
        else:
            raise ExecParseError(f"grep reading a file is not supported in {script!r}")
    if pattern is None:
        raise ExecParseError(f"grep without a pattern in {script!r}")
    return Command("grep", pattern=pattern, ignore_case=ignore_case, fixed=fixed)


def _float(value: str, script: str) -> float:
    try:
        return float(value)
    except ValueError as exc:
        raise ExecParseError(f"bad timeout {value!r} in {script!r}") from exc


def _check_url(url: str, script: str) -> str:
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ExecParseError(f"unsupported URL {url!r} in {script!r}")
    return urlunsplit(parts)


def localise(url: str, pod_ip: str) -> str:
    """Point ``localhost`` at the Pod's address (the probe runs inside the Pod's network)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if host in _LOCAL_HOSTS:
        netloc = pod_ip if parts.port is None else f"{pod_ip}:{parts.port}"
        return urlunsplit(parts._replace(netloc=netloc))
    return url


async def _run_pipeline(
    pipeline: list[Command], fetch: Fetch, pod_ip: str, timeout: float
) -> tuple[int, str]:
    stdin = b""
    status = 0
    reasons: list[str] = []
    for cmd in pipeline:
        status, stdin, reason = await _run_command(cmd, stdin, fetch, pod_ip, timeout)
        if reason:
            reasons.append(reason)  # like stderr: every command's complaint is visible
    return status, "; ".join(reasons)


async def _run_command(
    cmd: Command, stdin: bytes, fetch: Fetch, pod_ip: str, timeout: float
) -> tuple[int, bytes, str]:
    if cmd.name in {"true", "false", "exit"}:
        return cmd.exit_code, b"", "" if cmd.exit_code == 0 else f"{cmd.name} exited {cmd.exit_code}"
    if cmd.name == "grep":
        text = stdin.decode("utf-8", "replace")
        flags = re.IGNORECASE if cmd.ignore_case else 0
        pattern = re.escape(cmd.pattern) if cmd.fixed else cmd.pattern
        try:
            found = any(re.search(pattern, line, flags) for line in text.splitlines())
        except re.error:
            found = cmd.pattern in text
        return (0, stdin, "") if found else (1, b"", f"grep {cmd.pattern!r}: no match in {text[:200]!r}")
    url = localise(cmd.url, pod_ip)
    effective = min(timeout, cmd.timeout) if cmd.timeout else timeout
    result = await fetch(url, effective)
    if result.status is None:
        # wget: 4 network failure; curl: 7 couldn't connect / 28 timeout.
        return (4 if cmd.name == "wget" else 7), b"", f"GET {url}: {result.error}"
    if 200 <= result.status < 300 or (cmd.name == "curl" and not cmd.fail_on_http_error):
        return 0, result.body, ""
    # wget prints nothing on an HTTP error and exits 8; curl -f exits 22.
    return (8 if cmd.name == "wget" else 22), b"", f"GET {url}: HTTP {result.status}"
