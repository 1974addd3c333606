"""Time for `kuberay-operator demo --until-ready` to bring the samples to Ready, alone and 3 at once.

Runs the real console script as a subprocess (fresh embedded control plane each time) and reads
the moments its progress lines appear. Three concurrent demos check that simulators on one machine
do not collide (each takes its own random 127.N.0.0/16 block); the ratio compares them with the
lone run measured in the same invocation. Prints one JSON line.

    .venv/bin/python bench/demo_ready.py
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

OPERATOR = Path(sys.executable).with_name("kuberay-operator")
ARGS = [
    "demo",
    "--until-ready",
    "--timeout",
    "240",
    "--metrics-addr",
    "127.0.0.1:0",
    "--health-probe-bind-address",
    "127.0.0.1:0",
]
MARKS = {"api": "API server ready", "operator": "operator running", "ready": "all objects are ready"}


def run_one(results: list[dict[str, float]]) -> None:
    start = time.monotonic()
    proc = subprocess.Popen(
        [str(OPERATOR), *ARGS], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    seen: dict[str, float] = {}
    assert proc.stdout is not None
    for line in proc.stdout:
        for key, prefix in MARKS.items():
            if key not in seen and line.startswith(prefix):
                seen[key] = round(time.monotonic() - start, 2)
    seen["exit_code"] = proc.wait(300)
    results.append(seen)


def run_many(n: int) -> list[dict[str, float]]:
    results: list[dict[str, float]] = []
    threads = [threading.Thread(target=run_one, args=(results,)) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def main() -> None:
    [alone] = run_many(1)
    together = run_many(3)
    slowest = max(r.get("ready", float("inf")) for r in together)
    print(
        json.dumps(
            {
                "alone_api_s": alone.get("api"),
                "alone_operator_s": alone.get("operator"),
                "alone_ready_s": alone.get("ready"),
                "concurrent3_ready_s": sorted(r.get("ready") for r in together),
                "concurrent3_all_exit_0": all(r["exit_code"] == 0 for r in together),
                "slowdown_concurrent3_vs_alone": round(slowest / alone["ready"], 2)
                if alone.get("ready")
                else None,
                "max_child_rss_mib": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
