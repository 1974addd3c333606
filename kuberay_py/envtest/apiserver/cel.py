"""The small part of CEL that CRD validation rules (``x-kubernetes-validations``) use here.

kube-apiserver evaluates every rule with the full CEL language; the built-in server evaluates the
shapes our CRDs (and KubeRay's) carry, which is enough for their admission answers to match:
``self == oldSelf`` (immutability), ``self in ['a', 'b']``, ``has(self.a.b)``, ``!``, ``&&``,
``||``, ``==``/``!=`` and parentheses, over ``self``/``oldSelf`` field paths and string, number,
boolean and list literals. A rule outside this subset raises :class:`Unsupported`, and the caller
skips it (the server accepts what it cannot judge, as before, rather than reject valid objects).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Rule", "Unsupported", "compile_rule"]

_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")|(?P<num>-?\d+(?:\.\d+)?)"
    r"|(?P<op>&&|\|\||==|!=|!|\(|\)|\[|\]|,|\.)|(?P<id>[A-Za-z_][A-Za-z0-9_]*))"
)


class Unsupported(ValueError):
    """The rule uses CEL beyond this subset."""


class _Absent:
    """A field that is not set (``has()`` is false; reading it is a CEL "no such key" error)."""


ABSENT: Any = _Absent()


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise Unsupported(f"cannot read {text[pos:]!r}")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


@dataclass(frozen=True)
class Rule:
    """A compiled rule: ``evaluate(self, oldSelf)`` is True when the value passes."""

    text: str
    tree: tuple[Any, ...]

    @property
    def transition(self) -> bool:
        """Whether the rule reads ``oldSelf`` (kube evaluates those only on update)."""
        return re.search(r"\boldSelf\b", self.text) is not None

    def evaluate(self, self_value: Any, old_value: Any = ABSENT) -> bool:
        return bool(_eval(self.tree, {"self": self_value, "oldSelf": old_value}))


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.i = 0

    def peek(self) -> str:
        return self.toks[self.i][1] if self.i < len(self.toks) else ""

    def take(self, want: str | None = None) -> tuple[str, str]:
        if self.i >= len(self.toks):
            raise Unsupported("unexpected end")
        tok = self.toks[self.i]
        if want is not None and tok[1] != want:
            raise Unsupported(f"expected {want!r}, got {tok[1]!r}")
        self.i += 1
        return tok

    def parse(self) -> tuple[Any, ...]:
        tree = self.or_()
        if self.i != len(self.toks):
            raise Unsupported(f"unexpected {self.peek()!r}")
        return tree

    def or_(self) -> tuple[Any, ...]:
        left = self.and_()
        while self.peek() == "||":
            self.take()
            left = ("or", left, self.and_())
        return left

    def and_(self) -> tuple[Any, ...]:
        left = self.unary()
        while self.peek() == "&&":
            self.take()
            left = ("and", left, self.unary())
        return left

    def unary(self) -> tuple[Any, ...]:
        if self.peek() == "!":
            self.take()
            return ("not", self.unary())
        return self.compare()

    def compare(self) -> tuple[Any, ...]:
        left = self.primary()
        op = self.peek()
        if op in ("==", "!=", "in"):
            self.take()
            return (op, left, self.primary())
        return left

    def primary(self) -> tuple[Any, ...]:
        kind, text = self.take()
        if text == "(":
            inner = self.or_()
            self.take(")")
            return inner
        if text == "[":
            items: list[tuple[Any, ...]] = []
            while self.peek() != "]":
                items.append(self.primary())
                if self.peek() == ",":
                    self.take()
            self.take("]")
            return ("list", items)
        if kind == "str":
            body = text[1:-1]
            return ("lit", re.sub(r"\\(.)", r"\1", body))
        if kind == "num":
            return ("lit", float(text) if "." in text else int(text))
        if text in ("true", "false"):
            return ("lit", text == "true")
        if text == "has":
            self.take("(")
            path = self.path(self.take()[1])
            self.take(")")
            if len(path[2]) < 1:
                raise Unsupported("has() needs a field selection")
            return ("has", path)
        if kind == "id":
            return self.path(text)
        raise Unsupported(f"unexpected {text!r}")

    def path(self, root: str) -> tuple[Any, ...]:
        if root not in ("self", "oldSelf"):
            raise Unsupported(f"unknown identifier {root!r}")
        fields: list[str] = []
        while self.peek() == ".":
            self.take()
            kind, name = self.take()
            if kind != "id":
                raise Unsupported(f"bad field name {name!r}")
            fields.append(name)
        if self.peek() == "(":
            raise Unsupported("function and method calls")
        return ("path", root, tuple(fields))


def _select(value: Any, fields: tuple[str, ...]) -> Any:
    for name in fields:
        if not isinstance(value, dict) or name not in value:
            return ABSENT
        value = value[name]
    return value


def _eval(node: tuple[Any, ...], env: dict[str, Any]) -> Any:
    op = node[0]
    if op == "lit":
        return node[1]
    if op == "list":
        return [_eval(n, env) for n in node[1]]
    if op == "path":
        value = _select(env[node[1]], node[2])
        if value is ABSENT:
            raise Unsupported("reads a field that is not set")  # CEL: "no such key"
        return value
    if op == "has":
        _, root, fields = node[1]
        return _select(env[root], fields) is not ABSENT
    if op == "not":
        return not _eval(node[1], env)
    if op == "and":
        return bool(_eval(node[1], env)) and bool(_eval(node[2], env))
    if op == "or":
        return bool(_eval(node[1], env)) or bool(_eval(node[2], env))
    left, right = _eval(node[1], env), _eval(node[2], env)
    if op == "==":
        return left == right
    if op == "!=":
        return left != right
    if op == "in":
        return left in right
    raise Unsupported(op)


def compile_rule(text: str) -> Rule:
    """Parse ``text``; raises :class:`Unsupported` for CEL outside the subset."""
    return Rule(text, _Parser(text).parse())
