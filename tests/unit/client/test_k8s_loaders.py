"""The operator imports kubernetes_asyncio's loaders, not its ~860 generated API and model modules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

PROBE = """
import sys
import controllers.cli.operator
loaded = [m for m in sys.modules if m.startswith("kubernetes_asyncio")]
print(len(loaded), "kubernetes_asyncio.client.models" in sys.modules)
import kubernetes_asyncio.client as client
from kubernetes_asyncio.client import Configuration
print(client.V1Pod.__name__, client.CoreV1Api.__name__, client.Configuration is Configuration)
print("kubernetes_asyncio.client.models" in sys.modules)
"""


def test_operator_import_skips_the_generated_client_until_something_asks_for_it() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60
    ).stdout.split("\n")
    count, models = out[0].split()
    assert int(count) < 20 and models == "False"  # loaders and Configuration only
    assert out[1] == "V1Pod CoreV1Api True"  # the whole client still loads on first use
    assert out[2] == "True"
