from __future__ import annotations

from pathlib import Path

import pytest

from kuberay_py.envtest.crdfiles import read_crds


def test_reads_only_crds_from_files_and_directories(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: a.x.io}\n"
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n"
    )
    (tmp_path / "b.json").write_text('{"kind": "CustomResourceDefinition", "metadata": {"name": "b.x.io"}}')
    (tmp_path / "notes.txt").write_text("kind: CustomResourceDefinition")
    assert [c["metadata"]["name"] for c in read_crds([tmp_path])] == ["a.x.io", "b.x.io"]
    assert [c["metadata"]["name"] for c in read_crds([tmp_path / "b.json"])] == ["b.x.io"]


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_crds([tmp_path / "nope"])
    assert read_crds([tmp_path / "nope"], error_if_missing=False) == []
