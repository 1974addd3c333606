"""Command-line parsing with the rules of Go's ``flag`` package, which KubeRay's ``/manager`` uses.

A Deployment written for KubeRay passes its args straight to us, so they must mean what they meant
to Go, not what argparse would make of them:

* ``-name`` and ``--name`` are the same flag; ``-name=value``, ``-name value`` both set it.
* A bool flag is ``-name`` (true) or ``-name=false``; it never takes the *next* argument, so
  ``--enable-leader-election false`` is the flag set to true followed by the argument ``false``.
* A flag given twice keeps the last value (each occurrence is applied in order).
* Parsing stops at the first argument that is not a flag, or after ``--``.
* A non-bool flag takes the next argument even if it starts with ``-``.

Argparse differs on almost every point (prefix matching, optional values, interleaved positionals),
which is why this small parser exists instead of configuring argparse. Errors carry Go's wording,
so a crash-looping Pod's log reads as KubeRay's would.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Flag", "FlagError", "FlagSet", "HelpRequested", "parse_go_bool", "parse_go_float", "parse_go_int"]


class FlagError(ValueError):
    """A bad command line; the message is one line."""


class HelpRequested(Exception):
    """``-h``/``-help``/``--help`` was given (Go prints the usage and exits 0)."""


_GO_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_GO_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


def parse_go_bool(value: str) -> bool:
    """``strconv.ParseBool``: exactly these spellings, nothing else (no ``yes``, no ``on``)."""
    if value in _GO_TRUE:
        return True
    if value in _GO_FALSE:
        return False
    raise ValueError("parse error")


_GO_OCTAL = re.compile(r"[+-]?0[0-7_]+")


def parse_go_int(value: str) -> int:
    """``strconv.ParseInt(s, 0, 64)``: decimal, ``0x``/``0o``/``0b`` prefixes, a leading 0 is octal."""
    if value != value.strip():  # Go rejects surrounding spaces
        raise ValueError("parse error")
    text = value
    if _GO_OCTAL.fullmatch(text):
        sign = -1 if text.startswith("-") else 1
        return sign * int(text.lstrip("+-").replace("_", ""), 8)
    try:
        return int(text, 0)
    except ValueError:
        raise ValueError("parse error") from None


def parse_go_float(value: str) -> float:
    """``strconv.ParseFloat(s, 64)`` for the spellings a Deployment uses (``100``, ``100.0``, ``1e2``)."""
    if value != value.strip():
        raise ValueError("parse error")
    try:
        return float(value.replace("_", ""))
    except ValueError:
        raise ValueError("parse error") from None


def _go_quote(value: str) -> str:
    """Go's ``%q``: double quotes, backslash escapes."""
    return json.dumps(value, ensure_ascii=False)


@dataclass
class Flag:
    """One flag: ``setter`` converts the text and raises :class:`ValueError` on a bad value."""

    name: str
    setter: Callable[[str], Any]
    help: str
    is_bool: bool = False
    default_text: str = ""


@dataclass
class FlagSet:
    """Flags defined by name; :meth:`parse` applies each occurrence in order, as Go does."""

    program: str
    flags: dict[str, Flag] = field(default_factory=dict)

    def define(
        self, name: str, setter: Callable[[str], Any], help: str, *, is_bool: bool = False, default: str = ""
    ) -> None:
        if name in self.flags:
            raise ValueError(f"flag redefined: {name}")
        self.flags[name] = Flag(name, setter, help, is_bool, default)

    def parse(self, args: Iterable[str]) -> list[str]:
        """Apply the flags in ``args``; returns the arguments left after the flags."""
        rest = list(args)
        while rest:
            arg = rest[0]
            if len(arg) < 2 or arg[0] != "-":
                return rest
            minuses = 2 if arg[1] == "-" else 1
            if arg == "--":
                return rest[1:]
            name = arg[minuses:]
            if not name or name[0] in "-=":
                raise FlagError(f"bad flag syntax: {arg}")
            rest.pop(0)
            name, has_value, value = name.partition("=")
            flag = self.flags.get(name)
            if flag is None:
                if name in ("help", "h"):
                    raise HelpRequested()
                raise FlagError(f"flag provided but not defined: -{name}")
            if flag.is_bool:
                if not has_value:
                    value = "true"
                self._set(flag, value, bool_flag=True)
                continue
            if not has_value:
                if not rest:
                    raise FlagError(f"flag needs an argument: -{name}")
                value = rest.pop(0)
            self._set(flag, value, bool_flag=False)
        return rest

    @staticmethod
    def _set(flag: Flag, value: str, *, bool_flag: bool) -> None:
        try:
            flag.setter(value)
        except ValueError as err:
            kind = "invalid boolean value" if bool_flag else "invalid value"
            where = f"for -{flag.name}" if bool_flag else f"for flag -{flag.name}"
            raise FlagError(f"{kind} {_go_quote(value)} {where}: {err}") from None

    def usage(self) -> str:
        lines = [f"Usage of {self.program}:"]
        for name in sorted(self.flags):
            flag = self.flags[name]
            kind = "" if flag.is_bool else " value"
            lines.append(f"  -{name}{kind}")
            default = f" (default {flag.default_text})" if flag.default_text else ""
            lines.append(f"    \t{flag.help}{default}")
        return "\n".join(lines) + "\n"
