"""The controller layer of docs/design.md, checked by parsing every module's imports with ``ast``.

Each controller package (RayCluster, RayService, RayJob, RayCronJob) reads one reconcile in its
own modules and the shared kit; it never imports another controller package, so a change inside
one controller cannot break another, and a reader following one reconcile never leaves the
package except for the kit. The shared layers (``controllers.common`` and the rest below) import
no controller package at all. Only the CLI, which wires the controllers into one operator, may.
Imports inside functions and ``TYPE_CHECKING`` blocks count too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONTROLLERS = ROOT / "controllers"
CONTROLLER_PACKAGES = {"raycluster", "rayservice", "rayjob", "raycronjob"}
SHARED = {"common", "api", "ray", "spechash", "metrics", "constants", "batchscheduler", "webhooks"}
COMPOSITION = {"cli", "raysim"}  # the operator's entry points: they may wire controllers together


def _unit(path: Path, root: Path = CONTROLLERS) -> str:
    return path.relative_to(root).parts[0].removesuffix(".py")


def _imported_units(path: Path, root: Path = CONTROLLERS) -> list[tuple[int, str]]:
    """``(line, unit)`` for every import of ``controllers.<unit>``, relative imports resolved."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = ["controllers", *path.relative_to(root).parent.parts]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            # `from controllers import rayjob` imports the package itself
            targets = [f"{module}.{a.name}" for a in node.names] if module == "controllers" else [module]
        for target in targets:
            parts = target.split(".")
            if len(parts) > 1 and parts[0] == "controllers":
                found.append((node.lineno, parts[1]))
    return found


def _violations(root: Path = CONTROLLERS) -> list[str]:
    out: list[str] = []
    for path in sorted(root.rglob("*.py")):
        unit = _unit(path, root)
        for line, imported in _imported_units(path, root):
            if imported == unit or imported not in CONTROLLER_PACKAGES:
                continue
            if unit in COMPOSITION:
                continue
            where = f"{path.relative_to(root)}:{line}"
            if unit in CONTROLLER_PACKAGES:
                out.append(f"{where}: controller package {unit} imports controller package {imported}")
            else:
                out.append(f"{where}: shared layer {unit} imports controller package {imported}")
    return out


def test_every_unit_of_controllers_has_a_layer() -> None:
    units = {_unit(p) for p in CONTROLLERS.rglob("*.py")} - {"__init__"}
    assert units <= CONTROLLER_PACKAGES | SHARED | COMPOSITION, units - (
        CONTROLLER_PACKAGES | SHARED | COMPOSITION
    )


def test_no_controller_package_imports_another() -> None:
    problems = _violations()
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize(
    ("where", "source", "expected"),
    [
        (
            "rayjob/x.py",
            "from controllers.raycluster.common import check_name\n",
            "imports controller package raycluster",
        ),
        ("raycronjob/x.py", "from controllers import rayjob\n", "imports controller package rayjob"),
        (
            "rayservice/sub/x.py",
            "from ...raycluster import services\n",
            "imports controller package raycluster",
        ),
        (
            "rayjob/x.py",
            "def f():\n    import controllers.rayservice.cluster\n",
            "imports controller package rayservice",
        ),
        ("common/x.py", "from controllers.rayservice import cluster\n", "shared layer common imports"),
    ],
)
def test_the_check_catches_each_form(tmp_path: Path, where: str, source: str, expected: str) -> None:
    path = tmp_path / where
    path.parent.mkdir(parents=True)
    path.write_text(source)
    problems = _violations(tmp_path)
    assert len(problems) == 1 and expected in problems[0], problems


def test_the_check_allows_own_package_the_kit_and_the_cli(tmp_path: Path) -> None:
    sources = {
        "rayjob/x.py": "from controllers.rayjob.context import JobContext\nfrom . import builders\n",
        "rayjob/y.py": "from controllers.common.cluster import check_name\nfrom controllers import metrics\n",
        "cli/run.py": "from controllers.raycluster.setup import setup\nfrom controllers import rayjob\n",
    }
    for where, source in sources.items():
        path = tmp_path / where
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    assert _violations(tmp_path) == []
