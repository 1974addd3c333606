"""``python bench/profiled_operator.py OUT ARGS...``: ``kuberay-operator ARGS...`` with a cProfile.

SIGUSR1 starts profiling the main thread (the event loop), SIGUSR2 stops it and writes the stats
to OUT (later windows to OUT-2, OUT-3 ...), so a bench profiles only the parts it measures.
The timer is ``time.thread_time``: on a shared or throttled machine a wall-clock profiler
charges the waits of a preempted process to whatever call was running. Imports nothing of the
project before ``PYTHONPATH`` picks the tree, so it can profile another checkout's operator
(``bench/quota_fairness.py --baseline``).
"""

from __future__ import annotations

import cProfile
import signal
import sys
import time
from typing import Any


def main() -> None:
    out, argv = sys.argv[1], sys.argv[2:]
    profiles: list[cProfile.Profile] = []

    def start(*_: Any) -> None:
        profiles.append(cProfile.Profile(time.thread_time))
        profiles[-1].enable()

    def stop(*_: Any) -> None:
        profiles[-1].disable()
        # the first window to OUT, the next ones to OUT-2, OUT-3 ... (e.g. the idle window)
        n = len(profiles)
        profiles[-1].dump_stats(out if n == 1 else out.replace(".pstats", f"-{n}.pstats"))

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    sys.path.pop(0)  # this script's directory (bench/), not a package root
    from controllers.cli.main import main as operator_main

    sys.argv = ["kuberay-operator", *argv]
    sys.exit(operator_main())


if __name__ == "__main__":
    main()
