"""PromQL read by the monitoring tests through a real parser (``promql-parser``, the Rust crate
GreptimeDB uses, with Python bindings): which series an expression selects, and whether each
selection is confined to one operator's scrape targets.

"Scoped" means a selector either carries the scope's matchers itself, or sits on the left of
``and on (job, instance) <scope selector>`` (series whose target is one of the scope's), which is
how a series that carries its object's own ``namespace`` label is tied to the operator's target.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import promql_parser as pp

__all__ = ["Selector", "selectors", "unscoped_selectors"]


@dataclass(frozen=True)
class Selector:
    name: str
    matchers: tuple[tuple[str, str, str], ...]  # (label, operator, value)
    text: str

    def matcher(self, label: str) -> tuple[str, str] | None:
        """(operator, value) of this selector's matcher on ``label``; ``=`` is "Equal" etc."""
        for name, op, value in self.matchers:
            if name == label:
                return op, value
        return None


def _selector(node: object) -> Selector:
    vs = node.vector_selector if isinstance(node, pp.MatrixSelector) else node
    assert isinstance(vs, pp.VectorSelector)
    assert not vs.matchers.or_matchers, f"`or` inside label matchers is not used here: {vs}"
    matchers = tuple((m.name, str(m.op).rsplit(".", 1)[-1], m.value) for m in vs.matchers.matchers)
    return Selector(vs.name or "", matchers, str(vs).removesuffix("{}"))


def _children(node: object) -> list[object]:
    if isinstance(node, pp.BinaryExpr):
        return [node.lhs, node.rhs]
    if isinstance(node, pp.AggregateExpr):
        return [c for c in (node.expr, node.param) if c is not None]
    if isinstance(node, pp.Call):
        return list(node.args)
    if isinstance(node, (pp.ParenExpr, pp.UnaryExpr, pp.SubqueryExpr)):
        return [node.expr]
    return []


def _walk(
    node: object, scoped: bool, is_scope: Callable[[Selector], bool]
) -> Iterator[tuple[Selector, bool]]:
    if isinstance(node, (pp.VectorSelector, pp.MatrixSelector)):
        yield _selector(node), scoped
        return
    if isinstance(node, pp.BinaryExpr) and str(node.op) == "and" and node.modifier is not None:
        matching = node.modifier.matching
        rhs = node.rhs.expr if isinstance(node.rhs, pp.ParenExpr) else node.rhs
        if (
            matching is not None
            and str(matching.type).endswith("Include")
            and sorted(matching.labels) == ["instance", "job"]
            and isinstance(rhs, pp.VectorSelector)
            and is_scope(_selector(rhs))
        ):
            yield from _walk(node.lhs, True, is_scope)
            yield _selector(rhs), True
            return
    for child in _children(node):
        yield from _walk(child, scoped, is_scope)


def selectors(expr: str) -> list[Selector]:
    """Every vector selector of ``expr`` (those inside range selectors and subqueries included)."""
    return [s for s, _ in _walk(pp.parse(expr), False, lambda _: False)]


def unscoped_selectors(
    expr: str, *, is_scope: Callable[[Selector], bool], carries_scope: Callable[[Selector], bool]
) -> list[str]:
    """The selectors of ``expr`` that may pick up another operator's series.

    ``is_scope`` recognises the scope selector (joined on ``(job, instance)``); ``carries_scope``
    accepts a selector whose own matchers confine it.
    """
    return [
        s.text
        for s, joined in _walk(pp.parse(expr), False, is_scope)
        if not joined and not is_scope(s) and not carries_scope(s)
    ]
