"""envtest's modules form no import circle (lazy and ``TYPE_CHECKING`` imports count too).

A circle means two modules that can only be read, tested and changed together; the review of
issue #10 found four (apply/core, crds/deletion, http_api/server, sim kubelet/podworker).
"""

from __future__ import annotations

from pathlib import Path

from tests.unit.test_import_layers import _imports, _module_name, _sources

ROOT = Path(__file__).resolve().parents[3]
ENVTEST = ROOT / "kuberay_py" / "envtest"


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in _sources(ENVTEST)}
    # A module's own ancestor packages are not edges: `from . import x` loads x, and the package
    # is already being imported when its submodules run.
    return {
        module: {t for _, t in _imports(path, names=True) if t in modules and not module.startswith(t)}
        for module, path in modules.items()
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_checker_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_envtest_has_no_import_circles() -> None:
    assert _cycles(_graph()) == []
