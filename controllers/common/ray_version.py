"""``rayVersion``: the one place it is parsed and compared, with KubeRay v1.7.0's rules.

Users write ``rayVersion`` by hand ("2.52", "v2.52", "2.52.0rc1", "nightly", ...), and KubeRay
gates features on it. Two of our checks once parsed it two ways and disagreed on "2.52" (one
compared ``(2, 52) < (2, 52, 0)``), rejecting token auth that KubeRay accepts. Everything that
looks at the version goes through here.

KubeRay reads the version with two libraries, and we keep both rule sets because they accept
different inputs:

* :func:`parse_ray_version` -- apimachinery's ``version.ParseGeneric``, used by every cluster
  feature gate (token auth, unified health check probes, K8s token auth, worker group
  priority). Optional whitespace and ``v``, then two or more dot-separated numbers (the first
  without leading zeros); anything after the numbers is ignored, so "2.52.0rc1" and "2.52-dev"
  are 2.52.0 and 2.52. Missing components compare as 0 ("2.52" == "2.52.0").
* :func:`parse_loose_semver` -- Masterminds semver's ``NewVersion``, used only by RayJob's
  ``metadata`` check (>= 2.6.0). One to three numbers (missing ones are 0), an optional
  ``-prerelease`` and ``+build``, nothing else ("2.52.0rc1" is an error); a version with a
  prerelease never satisfies ``>= x.y.z``.

What an unparsable version means is the caller's choice, as in KubeRay: the probes treat it as
old (:func:`at_least` is False), the validations report it (:func:`requirement_error`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "JOB_METADATA",
    "K8S_TOKEN_AUTH",
    "TOKEN_AUTH",
    "UNIFIED_HEALTH_CHECK",
    "WORKER_GROUP_PRIORITY",
    "LooseSemver",
    "RayVersion",
    "RayVersionError",
    "at_least",
    "parse_loose_semver",
    "parse_ray_version",
    "requirement_error",
    "supports_job_metadata",
]

_UINT64_MAX = 2**64 - 1

# RE2's \s is [\t\n\f\r ] and its '.' stops at '\n'; Python's would accept more.
_GENERIC = re.compile(r"[\t\n\f\r ]*v?([0-9]+(?:\.[0-9]+)*)([^\n]*)")
_IDENT = r"[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*"
_LOOSE_SEMVER = re.compile(rf"v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-({_IDENT}))?(\+({_IDENT}))?")


_GO_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}


class RayVersionError(ValueError):
    """A ``rayVersion`` that does not parse; the message is the library's, as KubeRay shows it."""


def _go_quote(text: str) -> str:
    """Go's ``%q`` for the strings users put in a version (printable ASCII and a few escapes)."""
    out = []
    for ch in text:
        if ch in _GO_ESCAPES:
            out.append(_GO_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


@dataclass(frozen=True)
class RayVersion:
    """The numeric components of a version; ordering pads the shorter one with zeros."""

    components: tuple[int, ...]

    def compare(self, other: RayVersion) -> int:
        """-1, 0 or 1; "2.52" == "2.52.0" and "2.52.0.1" > "2.52.0" (apimachinery's rule)."""
        width = max(len(self.components), len(other.components))
        mine = self.components + (0,) * (width - len(self.components))
        theirs = other.components + (0,) * (width - len(other.components))
        return (mine > theirs) - (mine < theirs)

    def at_least(self, minimum: RayVersion) -> bool:
        return self.compare(minimum) >= 0

    def __str__(self) -> str:
        return ".".join(str(c) for c in self.components)


def parse_ray_version(text: str) -> RayVersion:
    """apimachinery ``version.ParseGeneric``; raises :class:`RayVersionError` with its message."""
    match = _GENERIC.fullmatch(text)
    if match is None:
        raise RayVersionError(f"could not parse {_go_quote(text)} as version")
    parts = match.group(1).split(".")
    if len(parts) < 2:
        raise RayVersionError(f"illegal version string {_go_quote(text)}")
    if parts[0].startswith("0") and parts[0] != "0":
        raise RayVersionError(
            f"illegal zero-prefixed version component {_go_quote(parts[0])} in {_go_quote(text)}"
        )
    components = []
    for part in parts:
        value = int(part)
        if value > _UINT64_MAX:
            raise RayVersionError(
                f"illegal non-numeric version component {_go_quote(part)} in {_go_quote(text)}: "
                f"strconv.ParseUint: parsing {_go_quote(part)}: value out of range"
            )
        components.append(value)
    return RayVersion(tuple(components))


TOKEN_AUTH = parse_ray_version("2.52.0")
UNIFIED_HEALTH_CHECK = parse_ray_version("2.53.0")
K8S_TOKEN_AUTH = parse_ray_version("2.55.0")
WORKER_GROUP_PRIORITY = parse_ray_version("2.56.0")
JOB_METADATA = parse_ray_version("2.6.0")


def at_least(text: str | None, minimum: RayVersion) -> bool:
    """Feature detection: an unset or unparsable version counts as older than any minimum."""
    try:
        return parse_ray_version(text or "").at_least(minimum)
    except RayVersionError:
        return False


def requirement_error(text: str | None, minimum: RayVersion, what: str) -> str | None:
    """KubeRay's three validation outcomes for "``what`` needs Ray >= ``minimum``", or None.

    ``what`` starts the sentence, e.g. "authOptions.mode is 'token'".
    """
    if not text:
        return f"{what} but RayVersion was not specified. Ray version {minimum} or later is required"
    try:
        version = parse_ray_version(text)
    except RayVersionError as exc:
        return f"{what} but RayVersion format is invalid: {text}, {exc}"
    if not version.at_least(minimum):
        return f"{what} but minimum Ray version is {minimum}, got {text}"
    return None


@dataclass(frozen=True)
class LooseSemver:
    """A Masterminds semver version: three numbers and an optional prerelease (build is ignored)."""

    version: RayVersion
    prerelease: str


def parse_loose_semver(text: str) -> LooseSemver:
    """Masterminds semver v3.4 ``NewVersion`` (its default coercing mode)."""
    match = _LOOSE_SEMVER.fullmatch(text)
    if match is None:
        raise RayVersionError("invalid semantic version")
    numbers = [match.group(1), (match.group(2) or ".0")[1:], (match.group(3) or ".0")[1:]]
    components = []
    for part in numbers:
        value = int(part)
        if value > _UINT64_MAX:
            raise RayVersionError(
                "error parsing version segment: strconv.ParseUint: "
                f"parsing {_go_quote(part)}: value out of range"
            )
        components.append(value)
    prerelease = match.group(5) or ""
    for piece in prerelease.split(".") if prerelease else []:
        if piece.isdigit() and len(piece) > 1 and piece.startswith("0"):
            raise RayVersionError("version segment starts with 0")
    return LooseSemver(RayVersion(tuple(components)), prerelease)


def supports_job_metadata(text: str) -> bool:
    """Whether ``ray job submit --metadata-json`` exists (Ray >= 2.6.0), as KubeRay checks it.

    A prerelease such as "2.9.0-rc1" does not satisfy Masterminds' ``>= 2.6.0``; an unparsable
    version raises :class:`RayVersionError`.
    """
    version = parse_loose_semver(text)
    return not version.prerelease and version.version.at_least(JOB_METADATA)
