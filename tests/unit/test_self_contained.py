"""Every test reads its inputs from the repository, so it runs (and skips) alike in any clone.

Two halves of one rule. Statically, by parsing every module under ``tests/`` with ``ast``: no
absolute path into a machine (a ``Path`` of ``/work/...``), no step out of the repository to a sibling
``shared`` folder, and no skip guarded by a file's existence (``skipif(not p.exists())``, a
``pytest.skip`` under ``if not p.is_dir()`` or in an ``except FileNotFoundError``). At run time,
``tests/skip_policy.py`` fails the session for any skip whose reason blames a missing file; the
last tests here run a tiny suite with that plugin and check that it does.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.skip_policy import file_reason

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
MACHINE_ROOTS = ("/work/", "/home/", "/Users/", "/mnt/", "/srv/", "/root/", "/opt/", "/tmp/")
SYSTEM_FILES = ("/proc/", "/dev/", "/sys/")
PATH_CALLS = {"Path", "PurePath", "PosixPath", "open"}
EXISTENCE = {"exists", "is_file", "is_dir", "isfile", "isdir", "glob", "rglob", "iterdir", "listdir"}


def _sources() -> list[Path]:
    """Every test module but this one (its literals are the patterns it looks for)."""
    here = Path(__file__).resolve()
    return sorted(
        p for p in TESTS.rglob("*.py") if "fixtures" not in p.relative_to(TESTS).parts and p.resolve() != here
    )


def _docstrings(tree: ast.AST) -> set[int]:
    """The ``id`` of each docstring constant: prose about paths reads no file."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _checks_a_file(expr: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and _name(n.func) in EXISTENCE for n in ast.walk(expr))


def _is_skip_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and _name(node.func) == "skip"


def _is_skipif(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and _name(node.func) == "skipif"


def _catches_missing_file(handler: ast.ExceptHandler) -> bool:
    caught = handler.type
    names = {_name(n) for n in ast.walk(caught)} if caught is not None else {"BaseException"}
    return bool(names & {"FileNotFoundError", "OSError", "IOError", "BaseException", "Exception"})


def _problems(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    where = path.relative_to(root)
    found: list[str] = []
    prose = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            text = node.value
            if text.startswith(MACHINE_ROOTS) and (
                not text.startswith("/tmp/") or "/" in text.removeprefix("/tmp/")
            ):
                found.append(f"{where}:{node.lineno}: absolute path {text!r}")
            if any(f"..{sep}shared" in text for sep in ("/", "\\")):
                found.append(f"{where}:{node.lineno}: {text!r} steps out of the repository")
        if isinstance(node, ast.Call) and _name(node.func) in PATH_CALLS and node.args:
            first = node.args[0]
            if (
                isinstance(first, ast.Constant)
                and isinstance(first.value, str)
                and first.value.startswith("/")
                and not first.value.startswith(SYSTEM_FILES)
            ):
                found.append(f"{where}:{node.lineno}: {_name(node.func)}({first.value!r}) is absolute")
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Div)
            and isinstance(node.right, ast.Constant)
            and node.right.value == "shared"
        ):
            found.append(f"{where}:{node.lineno}: a path to a sibling 'shared' folder")
        if _is_skipif(node) and any(_checks_a_file(arg) for arg in node.args):
            found.append(f"{where}:{node.lineno}: skipif on a file's existence")
        if isinstance(node, ast.If) and _checks_a_file(node.test):
            if any(_is_skip_call(n) for stmt in node.body + node.orelse for n in ast.walk(stmt)):
                found.append(f"{where}:{node.lineno}: pytest.skip guarded by a file's existence")
        if isinstance(node, ast.ExceptHandler) and _catches_missing_file(node):
            if any(_is_skip_call(n) for stmt in node.body for n in ast.walk(stmt)):
                caught = ast.unparse(node.type) if node.type is not None else "everything"
                if "FileNotFoundError" in caught or caught in ("OSError", "IOError", "everything"):
                    found.append(f"{where}:{node.lineno}: pytest.skip when {caught} is caught")
    return found


def test_no_test_depends_on_a_file_outside_the_repository() -> None:
    problems = [p for path in _sources() for p in _problems(path)]
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize(
    "source",
    [
        # Assembled from parts, so this file does not itself contain what the scan forbids.
        "SAMPLES = Path(" + '"/work' + '/shared/reference/kuberay/samples")',
        "CRDS = ROOT.parent / " + '"shared" / "reference"',
        'X = "..' + '/shared/reference/kuberay"',
        '@pytest.mark.skipif(not CRDS.exists(), reason="x")\ndef test_x(): pass',
        'def test_x():\n    if not SAMPLES.is_dir():\n        pytest.skip("nothing to do")',
        "def test_x():\n    try:\n        open(p)\n"
        '    except FileNotFoundError:\n        pytest.skip("later")',
    ],
)
def test_the_scan_catches_each_way_out(source: str, tmp_path: Path) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text(source + "\n")
    assert _problems(probe, tmp_path), source


def test_the_scan_leaves_container_paths_and_tool_skips_alone(tmp_path: Path) -> None:
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        'MOUNT = {"mountPath": "/tmp/ray"}\n'
        'STATUS = open("/proc/self/status")\n'
        'needs = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")\n'
        'HERE = Path(__file__).resolve().parents[1] / "fixtures" / "kuberay"\n'
    )
    assert _problems(probe, tmp_path) == []


@pytest.mark.parametrize(
    ("reason", "blames_a_file"),
    [
        ("KubeRay reference files not present", True),
        ("KubeRay samples not present", True),
        ("KubeRay reference CRDs not present", True),
        ("no such file: ray-cluster.sample.yaml", True),
        ("missing golden output for the sample", True),
        ("needs /work/shared/reference", True),
        ("kubectl not installed", False),
        ("kubectl is not on PATH", False),
        ("prometheus/promtool not on PATH (Debian package 'prometheus'; .ci/run installs it)", False),
        ("openssl not installed", False),
        ("no pod network on this host (needs CAP_NET_ADMIN)", False),
        ("uses built-in API server knobs; a real kube-apiserver is in use", False),
        ("parent-death signal is Linux-only", False),
        ("ray[serve] is not installed (No module named 'ray'); install the 'ray' extra", False),
    ],
)
def test_skip_reasons_that_blame_a_file(reason: str, blames_a_file: bool) -> None:
    assert file_reason(reason) is blames_a_file


def _run_suite(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_probe.py").write_text(body)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.skip_policy", "-p", "no:cacheprovider",
         "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path / "test_probe.py")],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120,
    )  # fmt: skip


def test_a_session_with_a_skip_for_a_missing_file_fails(tmp_path: Path) -> None:
    done = _run_suite(
        tmp_path,
        "import pytest\n"
        "def test_ok():\n    pass\n"
        "@pytest.mark.skipif(True, reason='KubeRay samples not present')\n"
        "def test_marker():\n    pass\n"
        "def test_disguised():\n"
        "    try:\n        open('nowhere.bin')\n"
        "    except FileNotFoundError:\n        pytest.skip('later')\n",
    )
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
    assert "test_probe.py::test_marker: KubeRay samples not present" in done.stdout, done.stdout
    assert "test_probe.py::test_disguised: later" in done.stdout, done.stdout


def test_a_session_with_only_tool_skips_passes(tmp_path: Path) -> None:
    done = _run_suite(
        tmp_path,
        "import pytest\n"
        "def test_ok():\n    pass\n"
        "@pytest.mark.skipif(True, reason='kubectl not installed')\n"
        "def test_tool():\n    pass\n",
    )
    assert done.returncode == pytest.ExitCode.OK, done.stdout + done.stderr
    assert "1 passed, 1 skipped" in done.stdout, done.stdout
