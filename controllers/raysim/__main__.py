"""``python -m controllers.raysim --kubeconfig PATH``: the cluster simulator with fake Ray nodes.

Runs the kubelet, EndpointSlice controller and garbage collector against any API server (the
built-in one from ``python -m kuberay_py.envtest``, or a real kube-apiserver started by envtest),
with every Ray Pod served by a fake Ray 2.60 node, until SIGINT/SIGTERM. Running it in its own
process keeps the simulator's CPU out of an operator's measurements (``bench/operator_load.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Sequence

from controllers.raysim.runtime import RayPodRuntime
from controllers.raysim.serve_state import Timings
from kuberay_py.client import Client, load_config
from kuberay_py.envtest.sim import Simulator


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    defaults = Timings()
    p = argparse.ArgumentParser(prog="python -m controllers.raysim", description=__doc__)
    p.add_argument(
        "--kubeconfig", default=None, help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)"
    )
    p.add_argument("--context", default=None)
    p.add_argument(
        "--probe-period-scale", type=float, default=1.0, help="multiplier for probe delays/periods"
    )
    p.add_argument(
        "--build-s", type=float, default=defaults.build_s, help="Serve import time per application"
    )
    p.add_argument("--replica-start-s", type=float, default=defaults.replica_start_s)
    p.add_argument("--drain-s", type=float, default=defaults.drain_s, help="worker proxy drain window")
    p.add_argument("--qps", type=float, default=200.0, help="client QPS towards the API server")
    p.add_argument("--burst", type=int, default=400)
    args = p.parse_args(argv)
    if args.probe_period_scale <= 0:
        p.error("--probe-period-scale must be > 0")
    return args


async def run(args: argparse.Namespace, stop: asyncio.Event) -> None:
    config = await load_config(args.kubeconfig, args.context, qps=args.qps, burst=args.burst)
    runtime = RayPodRuntime(
        timings=Timings(build_s=args.build_s, replica_start_s=args.replica_start_s, drain_s=args.drain_s)
    )
    async with Client(config) as client:
        sim = Simulator(client, pod_runtime=runtime, probe_period_scale=args.probe_period_scale)
        task = asyncio.create_task(sim.run())
        waiter = asyncio.create_task(stop.wait())
        ready = asyncio.create_task(sim.wait_ready())
        done, _ = await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            task.result()  # start-up failed: raise it
        print("cluster simulator with fake Ray nodes running; Ctrl-C to stop", flush=True)
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        for t in (task, waiter, ready):
            t.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await runtime.close()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)

    async def _main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        await run(args, stop)

    try:
        asyncio.run(_main())
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
