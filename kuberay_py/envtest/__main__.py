"""``python -m kuberay_py.envtest --kubeconfig-out PATH [--simulate]``: serve until interrupted.

Points kubectl (or any client) at an envtest environment: the built-in API server by default, or
real etcd + kube-apiserver when ``KUBEBUILDER_ASSETS`` names them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Sequence

from .environment import Environment


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m kuberay_py.envtest", description=__doc__)
    p.add_argument("--kubeconfig-out", required=True, help="where to write the kubeconfig file")
    p.add_argument(
        "--simulate", action="store_true", help="also run the cluster simulator (kubelet, GC, slices)"
    )
    p.add_argument("--crd", action="append", default=[], help="CRD file or directory to install (repeatable)")
    p.add_argument("--host", default="127.0.0.1", help="built-in server bind address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="built-in server port (default: a free port)")
    p.add_argument(
        "--tls", action="store_true", help="built-in server: HTTPS with a throw-away CA (needs openssl)"
    )
    p.add_argument(
        "--accept-loopback-endpoint-addresses",
        action="store_true",
        help="built-in server: accept loopback EndpointSlice addresses, which kube-apiserver rejects "
        "(for a separate simulator, e.g. raysim, on a host without a pod network)",
    )
    p.add_argument(
        "--rbac",
        action="store_true",
        help="built-in server: enforce RBAC (the kubeconfig's admin is in system:masters)",
    )
    p.add_argument("--pod-cidr", default=None, help="pod CIDR of --simulate's pod network (10.244.0.0/16)")
    p.add_argument("--probe-period-scale", type=float, default=1.0, help="simulator probe period multiplier")
    return p.parse_args(argv)


async def serve(args: argparse.Namespace, stop: asyncio.Event) -> None:
    env = Environment(
        args.crd,
        simulate=args.simulate,
        probe_period_scale=args.probe_period_scale,
        kubeconfig_out=args.kubeconfig_out,
        server_options={
            "host": args.host,
            "port": args.port,
            "accept_loopback_endpoint_addresses": args.accept_loopback_endpoint_addresses,
        },
        tls=args.tls,
        pod_cidr=args.pod_cidr,
        rbac=args.rbac,
    )
    async with env:
        mode = "real kube-apiserver" if env.real else "built-in API server"
        print(f"{mode} serving at {env.url}", flush=True)
        print(f"kubeconfig written to {env.kubeconfig_path}", flush=True)
        print(f"try: KUBECONFIG={env.kubeconfig_path} kubectl get namespaces", flush=True)
        await stop.wait()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        await serve(args, stop)

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
