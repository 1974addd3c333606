"""Label and field selectors with kube-apiserver's grammar and error wording.

Informers scope their caches with label selectors and controllers list "Pods of this cluster"
with them, so the full grammar (``=``, ``==``, ``!=``, ``in``, ``notin``, ``key``, ``!key``) is
supported. Parse errors are 400 BadRequest, as the real server answers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import StatusError

__all__ = [
    "FieldSelector",
    "LabelSelector",
    "label_selector_from_doc",
    "parse_field_selector",
    "parse_label_selector",
]

_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.op == "exists":
            return self.key in labels
        if self.op == "!":
            return self.key not in labels
        if self.op in ("=", "in"):
            return self.key in labels and labels[self.key] in self.values
        # "!=" and "notin" match objects without the key, as in Kubernetes.
        return self.key not in labels or labels[self.key] not in self.values


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...]

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, obj: Mapping[str, Any]) -> bool:
        if not self.requirements:
            return True
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(r.matches(labels) for r in self.requirements)


_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def label_selector_from_doc(doc: Any) -> LabelSelector | None:
    """``metav1.LabelSelectorAsSelector``: ``{}`` selects everything; an unusable one nothing."""
    if not isinstance(doc, dict):
        return None
    reqs = [Requirement(str(k), "=", (str(v),)) for k, v in (doc.get("matchLabels") or {}).items()]
    for expr in doc.get("matchExpressions") or []:
        op = _OPERATORS.get(expr.get("operator", "")) if isinstance(expr, dict) else None
        if op is None:
            return None
        reqs.append(
            Requirement(str(expr.get("key", "")), op, tuple(str(v) for v in expr.get("values") or []))
        )
    return LabelSelector(tuple(reqs))


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif text.startswith(("==", "!="), i):
            tokens.append(text[i : i + 2])
            i += 2
        elif ch in "=(),!":
            tokens.append(ch)
            i += 1
        else:
            j = i
            while j < len(text) and not text[j].isspace() and text[j] not in "=(),!":
                j += 1
            tokens.append(text[i:j])
            i = j
    return tokens


def _bad(selector: str, why: str) -> StatusError:
    return StatusError.bad_request(f"unable to parse requirement: {why}")


def _check_key(selector: str, key: str) -> None:
    if not key or len(key) > 317 or not _KEY.match(key):
        raise _bad(
            selector,
            f'invalid label key "{key}": name part must consist of alphanumeric characters, '
            "'-', '_' or '.', and must start and end with an alphanumeric character",
        )


def _check_value(selector: str, value: str) -> None:
    if len(value) > 63 or not _VALUE.match(value):
        raise _bad(
            selector,
            f'invalid label value: "{value}": at key: a valid label must be an empty string '
            "or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character",
        )


def parse_label_selector(text: str | None) -> LabelSelector:
    if not text or not text.strip():
        return LabelSelector(())
    toks = _tokenize(text)
    reqs: list[Requirement] = []
    i = 0

    def peek(k: int = 0) -> str | None:
        return toks[i + k] if i + k < len(toks) else None

    while i < len(toks):
        if toks[i] == "!":
            key = peek(1)
            if key is None or key in "=(),!":
                raise StatusError.bad_request(f"found '{key}', expected: identifier after '!'")
            _check_key(text, key)
            reqs.append(Requirement(key, "!"))
            i += 2
        else:
            key = toks[i]
            if key in "=(),!":
                raise StatusError.bad_request(f"found '{key}', expected: !, identifier, or 'end of string'")
            _check_key(text, key)
            op = peek(1)
            if op is None or op == ",":
                reqs.append(Requirement(key, "exists"))
                i += 1
            elif op in ("=", "==", "!="):
                value = peek(2)
                if value is None or value == ",":
                    value_s = ""
                    i += 2
                elif value in "=()!":
                    raise StatusError.bad_request(f"found '{value}', expected: identifier")
                else:
                    value_s = value
                    i += 3
                _check_value(text, value_s)
                reqs.append(Requirement(key, "!=" if op == "!=" else "=", (value_s,)))
            elif op in ("in", "notin"):
                if peek(2) != "(":
                    raise StatusError.bad_request(f"found '{peek(2)}', expected: '('")
                i += 3
                values: list[str] = []
                while True:
                    t = peek()
                    if t is None:
                        raise StatusError.bad_request("found 'end of string', expected: ')'")
                    if t == ")":
                        i += 1
                        break
                    if t == ",":
                        i += 1
                        continue
                    _check_value(text, t)
                    values.append(t)
                    i += 1
                reqs.append(Requirement(key, op, tuple(values)))
            else:
                raise StatusError.bad_request(
                    f"found '{op}', expected: in, notin, =, ==, !=, gt, lt or 'end of string'"
                )
        if i < len(toks):
            if toks[i] != ",":
                raise StatusError.bad_request(f"found '{toks[i]}', expected: ',' or 'end of string'")
            i += 1
    return LabelSelector(tuple(reqs))


FieldGetter = Callable[[Mapping[str, Any], str], str]


def _dotted(obj: Mapping[str, Any], path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


@dataclass(frozen=True)
class FieldSelector:
    terms: tuple[tuple[str, bool, str], ...]  # (field, equal?, value)

    @property
    def empty(self) -> bool:
        return not self.terms

    def matches(self, obj: Mapping[str, Any]) -> bool:
        for fld, equal, value in self.terms:
            actual = _dotted(obj, fld)
            if (actual == value) != equal:
                return False
        return True

    def exact_name(self) -> str | None:
        for fld, equal, value in self.terms:
            if fld == "metadata.name" and equal:
                return value
        return None


def parse_field_selector(
    text: str | None, allowed: tuple[str, ...], kind: str, api_version: str
) -> FieldSelector:
    if not text or not text.strip():
        return FieldSelector(())
    terms: list[tuple[str, bool, str]] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "!=" in part:
            fld, value = part.split("!=", 1)
            equal = False
        elif "==" in part:
            fld, value = part.split("==", 1)
            equal = True
        elif "=" in part:
            fld, value = part.split("=", 1)
            equal = True
        else:
            raise StatusError.bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        fld = fld.strip()
        if fld not in ("metadata.name", "metadata.namespace") and fld not in allowed:
            raise StatusError.bad_request(
                f"field label not supported: {fld}"
                if not kind
                else f'"{fld}" is not a known field selector: only "metadata.name", "metadata.namespace"'
            )
        terms.append((fld, equal, value.strip()))
    return FieldSelector(tuple(terms))
