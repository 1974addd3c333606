"""Kubernetes name and value syntax checks, and Go's duration syntax.

These mirror ``k8s.io/apimachinery/pkg/util/validation`` (messages included) and Go's
``time.ParseDuration``, because KubeRay validates names and the ``ray.io/initializing-timeout``
annotation with them and users see the same wording from both operators.
"""

from __future__ import annotations

import re

__all__ = [
    "dns1035_label_errors",
    "dns1123_label_errors",
    "label_value_errors",
    "object_name_problem",
    "parse_go_duration",
    "qualified_name_errors",
]

_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def _label_errors(value: str, pattern: re.Pattern[str], mismatch: str) -> list[str]:
    """apimachinery's label-shaped checks: at most 63 characters, and the whole value matching."""
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not pattern.fullmatch(value):
        errs.append(mismatch)
    return errs


def dns1035_label_errors(value: str) -> list[str]:
    return _label_errors(
        value,
        _DNS1035,
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
        "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
        "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
    )


def object_name_problem(kind: str, name: str, max_len: int) -> str | None:
    """KubeRay's name check (``utils.Validate<Kind>Metadata``): only the first problem, length
    before syntax, and the DNS-1035 errors as Go's ``%v`` prints a ``[]string`` (``[a b]``). The
    controllers and the admission webhooks report this same text."""
    if len(name) > max_len:
        return f"{kind} name should be no more than {max_len} characters"
    errs = dns1035_label_errors(name)
    if errs:
        return f"{kind} name should be a valid DNS1035 label: [{' '.join(errs)}]"
    return None


def dns1123_label_errors(value: str) -> list[str]:
    return _label_errors(
        value,
        _DNS1123_LABEL,
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
        "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
        "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
    )


def qualified_name_errors(value: str) -> list[str]:
    """A label or annotation key: an optional DNS-1123 subdomain prefix and a name of ≤ 63 chars."""
    errs: list[str] = []
    prefix, sep, name = value.rpartition("/")
    if sep:
        if not prefix:
            errs.append("prefix part must be non-empty")
        elif len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix):
            errs.append("prefix part must be a lowercase RFC 1123 subdomain")
    if not name:
        errs.append("name part must be non-empty")
        return errs
    if len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _QUALIFIED_NAME.fullmatch(name):
        errs.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character"
        )
    return errs


def label_value_errors(value: str) -> list[str]:
    return _label_errors(
        value,
        _LABEL_VALUE,
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
        "and must start and end with an alphanumeric character",
    )


_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def parse_go_duration(text: str) -> float:
    """Seconds in a Go duration string such as ``"1h30m"``, ``"-2.5s"`` or ``"0"``.

    Raises ValueError on anything ``time.ParseDuration`` would reject (e.g. ``"10"``, ``"5d"``).
    """
    s = text
    sign = 1.0
    if s[:1] in "+-" and s:
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise ValueError(f"invalid duration {text!r}")
    total = 0.0
    pos = 0
    while pos < len(s):
        match = _DURATION_PART.match(s, pos)
        if not match:
            raise ValueError(f"invalid duration {text!r}")
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    return sign * total
