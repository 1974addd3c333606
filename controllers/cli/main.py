"""Entry point of the ``kuberay-operator`` console script."""

from __future__ import annotations

import sys

import anyio

from .flags import operator_flags, parse_args

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    command = args.command or "run"
    if command == "crds":
        from .crds import print_or_write_crds

        return print_or_write_crds(args.out)
    flags = operator_flags(args)
    if command == "demo":
        from .demo import run_demo

        async def demo() -> int:
            return await run_demo(
                flags,
                files=args.files,
                until_ready=args.until_ready,
                timeout=args.timeout,
                kubeconfig_out=args.kubeconfig_out,
                no_operator=args.no_operator,
            )

        try:
            return anyio.run(demo)
        except KeyboardInterrupt:
            return 0
    from .run import run_operator

    async def operator() -> int:
        return await run_operator(flags)

    return anyio.run(operator)
