"""The import layers of docs/design.md, checked by parsing every module's imports with ``ast``.

Imports inside functions and ``TYPE_CHECKING`` blocks count too: a lazy import of a higher layer is
still a dependency on it. A new top-level ``kuberay_py`` module must be given a layer here and in
docs/design.md before it can land.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "kuberay_py"

BASE = {"clock", "log", "metrics", "objects"}
# What each top-level unit of kuberay_py may import from kuberay_py (besides itself).
ALLOWED: dict[str, set[str]] = {
    "clock": set(),
    "log": set(),
    "metrics": set(),
    "objects": set(),
    # One aiohttp application on one address: the manager's servers and the webhook server.
    "httpserver": {"log"},
    "client": BASE,
    "workqueue": BASE,  # deliberately no client: the queue knows nothing about the API
    "cache": BASE | {"client", "workqueue"},
    "controller": BASE | {"client", "workqueue", "cache"},
    "manager": BASE | {"client", "workqueue", "cache", "controller", "httpserver"},
    # The admission webhook server: base only; the manager runs it through a protocol.
    "webhook": BASE | {"httpserver"},
    # Test support: may use the client and cache (the simulator does), never the manager/controller.
    "envtest": BASE | {"client", "workqueue", "cache"},
}
# The built-in API server is a stand-in for kube-apiserver: it must not share code with the client
# it serves, or a client bug could hide itself.
APISERVER_ALLOWED = BASE


def _module_name(path: Path, root: Path = ROOT) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, root: Path = ROOT, *, names: bool = False) -> list[tuple[int, str]]:
    """``(line, module)`` per import; ``names=True`` adds ``pkg.x`` for every ``from pkg import x``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    module = _module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.append((node.lineno, target))
            # `from kuberay_py import controller` imports the submodule, not just a name.
            if target == "kuberay_py" or names:
                found.extend((node.lineno, f"{target}.{a.name}") for a in node.names)
    return found


def _unit(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "kuberay_py" else None


def _sources(pkg: Path) -> list[Path]:
    return sorted(p for p in pkg.rglob("*.py") if ".venv" not in p.parts)


def test_every_kuberay_py_module_respects_its_layer() -> None:
    violations: list[str] = []
    for path in _sources(PKG):
        module = _module_name(path)
        unit = _unit(module)
        if unit is None:  # kuberay_py/__init__.py
            allowed = set(ALLOWED) - {"envtest"}
        elif unit not in ALLOWED:
            violations.append(f"{module}: top-level unit {unit!r} has no layer in docs/design.md")
            continue
        elif module.startswith("kuberay_py.envtest.apiserver"):
            allowed = APISERVER_ALLOWED | {"envtest"}
        else:
            allowed = ALLOWED[unit] | {unit}
        for lineno, target in _imports(path):
            if target == "controllers" or target.startswith("controllers."):
                violations.append(f"{module}:{lineno} imports {target} (never from kuberay_py)")
                continue
            dep = _unit(target)
            if dep is not None and dep not in allowed:
                violations.append(f"{module}:{lineno} imports {target} ({unit or 'kuberay_py'} may not)")
    assert not violations, "import layer violations:\n" + "\n".join(violations)


def test_the_checker_catches_a_higher_layer_import(tmp_path: Path) -> None:
    """The parser must see relative, aliased, lazy and TYPE_CHECKING imports, or the check is hollow."""
    fake = tmp_path / "kuberay_py" / "workqueue" / "bad.py"
    fake.parent.mkdir(parents=True)
    fake.write_text(
        "from typing import TYPE_CHECKING\n"
        "from ..client import Client\n"
        "import kuberay_py.manager as m\n"
        "if TYPE_CHECKING:\n    from kuberay_py.controller import Builder\n"
        "def f():\n    from kuberay_py import cache\n"
    )
    targets = [t for _, t in _imports(fake, tmp_path)]
    assert "kuberay_py.client" in targets
    assert "kuberay_py.manager" in targets
    assert "kuberay_py.controller" in targets
    assert "kuberay_py.cache" in targets
    assert {_unit(t) for t in targets} - ALLOWED["workqueue"] - {None} == {
        "client",
        "manager",
        "controller",
        "cache",
    }


@pytest.mark.parametrize("unit", sorted(BASE))
def test_base_modules_import_nothing_from_kuberay_py(unit: str) -> None:
    paths = [PKG / f"{unit}.py"] if (PKG / f"{unit}.py").exists() else _sources(PKG / unit)
    assert paths, f"kuberay_py.{unit} is missing"
    for path in paths:
        deps = {_unit(t) for _, t in _imports(path)} - {None, unit}
        assert not deps, f"{path.name} imports kuberay_py.{deps}"


# -- the operator half ---------------------------------------------------------------------------
CONTROLLERS = ROOT / "controllers"
# Test support: the embedded API server and cluster simulator, and the fake Ray that runs on it.
TEST_SUPPORT = ("kuberay_py.envtest", "controllers.raysim")
# The only operator modules that may use them: the demo command (it runs the embedded control
# plane) and the fake Ray itself.
MAY_USE_TEST_SUPPORT = ("controllers.cli.demo", "controllers.raysim")


def _is_under(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def test_operator_modules_never_import_envtest_or_raysim() -> None:
    """Reconcilers, builders, API models, the dashboard client and the CLI's ``run`` are what a
    production install executes: none of them may import the test support, even lazily."""
    violations: list[str] = []
    checked: list[str] = []
    for path in _sources(CONTROLLERS):
        module = _module_name(path)
        if _is_under(module, MAY_USE_TEST_SUPPORT):
            continue
        checked.append(module)
        for lineno, target in _imports(path):
            if _is_under(target, TEST_SUPPORT):
                violations.append(f"{module}:{lineno} imports {target}")
    assert not violations, "operator modules importing test support:\n" + "\n".join(violations)
    for expected in (
        "controllers.raycluster.reconciler",
        "controllers.rayservice.reconciler",
        "controllers.raycluster.pod",
        "controllers.api.raycluster",
        "controllers.ray.dashboard",
        "controllers.cli.run",
    ):
        assert expected in checked, f"{expected} was not scanned"


def test_running_the_operator_loads_no_test_support() -> None:
    """Transitively too: importing the operator's entry points pulls in no envtest or raysim module."""
    code = (
        "import sys\n"
        "import controllers.cli.main, controllers.cli.operator, controllers.cli.run\n"
        "import controllers.raycluster.setup, controllers.rayservice.setup, controllers.rayjob.setup\n"
        f"bad = sorted(m for m in sys.modules if m.startswith({TEST_SUPPORT!r}))\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"loaded test support: {done.stdout} {done.stderr}"


def test_the_demo_is_what_uses_the_embedded_control_plane() -> None:
    """The exemption above is real: the demo does import envtest (else it is dead weight)."""
    targets = [t for _, t in _imports(CONTROLLERS / "cli" / "demo.py")]
    assert any(_is_under(t, ("kuberay_py.envtest",)) for t in targets)
