"""Entry point of the ``kuberay-operator`` console script."""

from __future__ import annotations

import sys

import anyio

from .flags import OperatorFlags, operator_flags, parse_args

__all__ = ["main"]


def _with_configuration(flags: OperatorFlags) -> OperatorFlags | int:
    """``--config``'s values over the flags, then KubeRay's start-up checks; an exit code on error."""
    from .compat import config_error
    from .configuration import ConfigurationError, apply_configuration, ignored_flags, load_configuration

    if flags.config:
        try:
            config = load_configuration(flags.config)
        except ConfigurationError as err:
            sys.stderr.write(f"kuberay-operator: error: invalid config file: {err}\n")
            return 2
        ignored, unknown = ignored_flags(flags), config.unknown_fields()
        flags = apply_configuration(flags, config)
        # Said once logging is configured (run.py), so the lines have the chosen format.
        flags.config_notes = [
            *(("operator.flag_ignored_with_config", {"flag": f, "config": flags.config}) for f in ignored),
            *(("operator.config_unknown_field", {"field": f, "config": flags.config}) for f in unknown),
        ]
    error = config_error(flags)
    if error is not None:
        sys.stderr.write(f"kuberay-operator: error: {error}\n")
        return 2
    return flags


def main(argv: list[str] | None = None) -> int:
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    command = args.command or "run"
    if command == "crds":
        from .crds import print_or_write_crds

        return print_or_write_crds(args.out)
    flags = operator_flags(args)
    if command == "run":
        configured = _with_configuration(flags)
        if isinstance(configured, int):
            return configured
        flags = configured
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

    return anyio.run(operator, backend_options={"use_uvloop": flags.event_loop == "uvloop"})
