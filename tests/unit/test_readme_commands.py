"""The README's two set-up commands are the contract with a new user and with CI; keep them true."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_readme_opens_with_demo_then_test_command() -> None:
    demo, test = _readme_commands()[:2]
    assert demo.endswith("kuberay-operator demo")
    assert "pytest" in test


def test_ci_runs_the_readmes_test_command_verbatim() -> None:
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert _readme_commands()[1] in ci_lines
