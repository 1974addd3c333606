from pathlib import Path

import pytest
import yaml

from controllers.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
# The CRDs are large; libyaml parses them in a fraction of the pure-Python loader's time.
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def test_crds_command_prints_the_committed_crds(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds"]) == 0
    printed = list(yaml.load_all(capsys.readouterr().out, Loader=LOADER))
    committed = [
        yaml.load(p.read_text(), Loader=LOADER) for p in sorted((ROOT / "config/crd/bases").glob("*.yaml"))
    ]
    key = lambda crd: crd["metadata"]["name"]  # noqa: E731
    assert sorted(printed, key=key) == sorted(committed, key=key)


def test_crds_command_writes_files(tmp_path: Path) -> None:
    assert main(["crds", "--out", str(tmp_path)]) == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [
        "ray.io_rayclusters.yaml",
        "ray.io_raycronjobs.yaml",
        "ray.io_rayjobs.yaml",
        "ray.io_rayservices.yaml",
    ]
