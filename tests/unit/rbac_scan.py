"""Derives the API permissions the operator's code needs from its source (an AST scan).

Shared by the static RBAC test (``test_rbac.py``) and the dynamic one, which checks the requests a
real run sent. Every ``<client>.<verb>(<Resource>, ...)`` call in the operator's modules becomes a
``(apiGroup, resource[/subresource], verb)``; every informer the controllers open (``for_``,
``owns``, ``watches``, ``informer_for`` and cache reads) becomes ``list`` + ``watch``. A Resource
passed through a helper's parameter is resolved from that helper's call sites in the same module;
anything the scan cannot resolve is reported, so a new dynamic call cannot slip past the check.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kuberay_py.client import Resource

ROOT = Path(__file__).resolve().parents[2]

# The operator process: the controllers it runs and the manager services (events, leases).
# Left out on purpose: controllers/cli/demo.py (writes to the embedded API server it owns),
# controllers/raysim (fake Ray), controllers/api (pure models), kuberay_py/cache and
# kuberay_py/controller (generic over the Resource they are given: covered by the informers below).
SCANNED = ["controllers", "kuberay_py/manager"]
SKIPPED = ["controllers/cli/demo.py", "controllers/raysim", "controllers/api"]

CLIENT_VERBS = {
    "get": "get",
    "list": "list",
    "list_all": "list",
    "watch": "watch",
    "create": "create",
    "update": "update",
    "update_status": "update",
    "patch": "patch",
    "delete": "delete",
    "delete_collection": "deletecollection",
}
CACHE_READS = {"get", "list", "list_owned", "informer_for"}
BUILDER_SOURCES = {"for_", "owns", "watches"}

Permission = tuple[str, str, str]  # (apiGroup, resource[/subresource], verb)


@dataclass(frozen=True)
class Site:
    file: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.text}"


def _modules() -> Iterator[tuple[Path, str]]:
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if any(rel == s or rel.startswith(s + "/") for s in SKIPPED):
                continue
            yield path, rel[: -len(".py")].replace("/", ".").removesuffix(".__init__")


def _receiver(node: ast.expr) -> str:
    return ast.unparse(node).rsplit(".", 1)[-1].lstrip("_")


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}


def _enclosing_function(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.AST | None:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return node
    return None


class _Resolver:
    def __init__(self, tree: ast.Module, namespace: dict[str, Any]) -> None:
        self.tree = tree
        self.namespace = namespace
        self.parents = _parents(tree)

    def constant(self, expr: ast.expr) -> Resource | None:
        if not isinstance(expr, ast.Name | ast.Attribute):
            return None
        try:
            value = eval(compile(ast.Expression(expr), "<scan>", "eval"), dict(self.namespace))
        except Exception:
            return None
        return value if isinstance(value, Resource) else None

    def resources(self, expr: ast.expr, at: ast.AST, depth: int = 0) -> list[Resource] | None:
        """The Resource(s) ``expr`` can be; None when the scan cannot tell.

        A parameter is followed through the helper's callers (and theirs, a few levels deep).
        """
        found = self.constant(expr)
        if found is not None:
            return [found]
        if depth > 3:
            return None
        func = _enclosing_function(at, self.parents)
        if not isinstance(expr, ast.Name) or not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            return None
        params = [a.arg for a in func.args.args]
        if expr.id not in params:
            return None
        index = params.index(expr.id) - (1 if params and params[0] in ("self", "cls") else 0)
        values: list[Resource] = []
        for call in ast.walk(self.tree):
            if not isinstance(call, ast.Call):
                continue
            name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)
            if name != func.name:
                continue
            arg = next((k.value for k in call.keywords if k.arg == expr.id), None)
            if arg is None and index < len(call.args):
                arg = call.args[index]
            res = self.resources(arg, call, depth + 1) if arg is not None else None
            if res is None:
                return None
            values.extend(res)
        return values or None


def _resource_arg(call: ast.Call) -> ast.expr | None:
    if call.args:
        return call.args[0]
    return next((k.value for k in call.keywords if k.arg == "res"), None)


def _subresource(call: ast.Call, method: str) -> str | None:
    if method == "update_status":
        return "status"
    for k in call.keywords:
        if k.arg == "subresource" and isinstance(k.value, ast.Constant):
            return str(k.value.value)
    return None


def derive(modules: list[tuple[Path, str]] | None = None) -> dict[Permission, list[Site]]:
    """Every permission the scanned code needs, with the call sites that need it.

    ``modules`` ((file, importable name) pairs) defaults to the operator's modules. Unresolvable
    client calls are returned under the pseudo-permission ``("?", <source>, verb)``.
    """
    needed: dict[Permission, list[Site]] = {}
    for path, modname in _modules() if modules is None else modules:
        source = path.read_text()
        tree = ast.parse(source)
        module = importlib.import_module(modname)
        resolver = _Resolver(tree, vars(module))
        rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            method, receiver = node.func.attr, _receiver(node.func.value)
            if receiver.endswith("client") and method in CLIENT_VERBS:
                verbs, sub = [CLIENT_VERBS[method]], _subresource(node, method)
            elif receiver.endswith("client") and method == "request":
                verbs, sub = ["<raw request>"], None
            elif (receiver.endswith("cache") and method in CACHE_READS) or method in BUILDER_SOURCES:
                verbs, sub = ["list", "watch"], None
            else:
                continue
            site = Site(rel, node.lineno, ast.unparse(node)[:100])
            arg = _resource_arg(node)
            found = resolver.resources(arg, node) if arg is not None and verbs[0] != "<raw request>" else None
            if found is None:
                for verb in verbs:
                    needed.setdefault(("?", site.text, verb), []).append(site)
                continue
            for res in found:
                resource = res.plural + (f"/{sub}" if sub else "")
                for verb in verbs:
                    needed.setdefault((res.group, resource, verb), []).append(site)
    return needed
