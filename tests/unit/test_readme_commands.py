"""The README's two set-up commands are the contract with a new user and with CI; keep them true.

Each step of each command is checked against what it names: the extras exist in pyproject, the
console script resolves to the CLI and knows the ``demo`` subcommand, and a bare ``pytest`` collects
the whole suite (``testpaths``), as CI runs it.
"""

from __future__ import annotations

import importlib
import shlex
import tomllib
from pathlib import Path

from controllers.cli.flags import parse_args

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def _steps(command: str) -> list[list[str]]:
    return [shlex.split(step) for step in command.split("&&")]


def _installed_extras(steps: list[list[str]]) -> set[str]:
    """The extras a ``pip install -e .[a,b]`` step asks for (``set()`` for a bare ``.``)."""
    pip = next(s for s in steps if s[0].endswith("/pip") and s[1] == "install")
    target = pip[pip.index("-e") + 1]
    assert target.startswith("."), f"installs {target!r}, not this checkout"
    return set(target[2:-1].split(",")) if "[" in target else set()


def test_the_first_command_installs_the_package_and_runs_the_demo() -> None:
    steps = _steps(_readme_commands()[0])
    assert steps[0] == ["python3", "-m", "venv", ".venv"]
    assert _installed_extras(steps) == set()  # the demo needs no test extras
    script, *args = steps[-1]
    assert script == ".venv/bin/kuberay-operator"
    module, _, func = PYPROJECT["project"]["scripts"]["kuberay-operator"].partition(":")
    assert callable(getattr(importlib.import_module(module), func))
    assert parse_args(args).command == "demo"


def test_the_second_command_installs_the_test_extras_and_runs_the_whole_suite() -> None:
    steps = _steps(_readme_commands()[1])
    assert steps[0] == ["python3", "-m", "venv", ".venv"]
    extras = _installed_extras(steps)
    assert extras and extras <= set(PYPROJECT["project"]["optional-dependencies"])
    assert "test" in extras and "ray" in extras  # the real-Ray test runs too
    assert steps[-1] == [".venv/bin/python", "-m", "pytest"]  # no selection: the whole suite
    pytest_options = PYPROJECT["tool"]["pytest"]["ini_options"]
    assert pytest_options["testpaths"] == ["tests"]
    test_requirements = PYPROJECT["project"]["optional-dependencies"]["test"]
    assert "pytest" in {r.split(">")[0].split("=")[0] for r in test_requirements}


def test_ci_runs_the_readmes_test_command_verbatim() -> None:
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert _readme_commands()[1] in ci_lines
