"""The cluster the CLI tests run operators against: ``demo --no-operator`` in its own process, so
an operator's event loop (in a subprocess, or this test's own) is never the API server's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.cli.procs import START_TIMEOUT, Proc


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[Proc, Path]]:
    kubeconfig = tmp_path / "kubeconfig"
    demo = Proc("demo", "--no-operator", "--kubeconfig-out", str(kubeconfig))
    try:
        demo.wait_for(
            lambda line: line.startswith("embedded cluster only (--no-operator)"), timeout=START_TIMEOUT
        )
        hint = demo.wait_for(lambda line: "kuberay-operator run --kubeconfig" in line, timeout=10)
        assert str(kubeconfig) in hint
        yield demo, kubeconfig
    finally:
        demo.kill()
