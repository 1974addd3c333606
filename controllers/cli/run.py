"""``kuberay-operator run``: the in-cluster operator."""

from __future__ import annotations

import signal
import sys

import anyio
import structlog

from controllers.batchscheduler import SchedulerUnavailable, check_served
from kuberay_py import log
from kuberay_py.client import ApiError, Client, ClientConfig, load_config_retrying
from kuberay_py.manager import LeaderElectionLost

from .compat import startup_notes
from .flags import OperatorFlags
from .operator import build_manager

__all__ = ["run_operator"]

logger = structlog.get_logger("kuberay-operator")


async def run_operator(flags: OperatorFlags) -> int:
    """Exit 0 after a SIGTERM drain; 1 when the lease is lost (the Pod restarts as a standby)."""
    try:
        log.configure(
            flags.log_format,
            flags.log_level,
            file_path=flags.log_file_path or None,
            file_fmt=flags.log_file_encoder,
            stacktrace_level=flags.log_stacktrace_level or None,
        )
    except OSError as err:
        sys.stderr.write(f"kuberay-operator: error: cannot write the log file {flags.log_file_path}: {err}\n")
        return 2
    for level, event, fields in startup_notes(flags):
        (logger.warning if level == "warning" else logger.info)(event, **fields)
    config = await _load_config_until_signalled(flags)
    if config is None:
        return 0
    try:
        await _check_batch_scheduler(config, flags)
    except (SchedulerUnavailable, ApiError) as err:  # KubeRay: "unable to create batch scheduler"
        logger.error("operator.batch_scheduler_unavailable", error=str(err))
        return 1
    try:
        manager = build_manager(config, flags)
    except ValueError as err:  # e.g. leader election out of cluster without a namespace
        sys.stderr.write(f"kuberay-operator: error: {err}\n")
        return 2
    logger.info(
        "operator.starting",
        reconcile_concurrency=flags.reconcile_concurrency,
        watch_namespaces=flags.watch_namespace or "all",
        leader_election=flags.enable_leader_election,
    )
    try:
        await manager.run()
    except LeaderElectionLost:
        logger.error("operator.leader_election_lost", lease=flags.leader_election_id)
        return 1
    except Exception as err:  # a port in use, caches that never sync (a scheduler's CRD missing), ...
        # KubeRay logs "problem running manager" and exits 1 for any error of its manager.
        logger.error("operator.failed", error=str(err), exc_info=True)
        return 1
    logger.info("operator.stopped")
    return 0


async def _check_batch_scheduler(config: ClientConfig, flags: OperatorFlags) -> None:
    """KubeRay creates its batch scheduler before the manager and exits when it cannot."""
    client = Client(config)
    try:
        await check_served(client, kubernetes_was=flags.feature_gates.get("KubernetesWAS", False))
    finally:
        await client.close()


async def _load_config_until_signalled(flags: OperatorFlags) -> ClientConfig | None:
    """The client config, or None if SIGTERM/SIGINT arrives first.

    A broken or missing kubeconfig is logged and retried with back-off rather than crash-looping;
    the manager's own signal handling starts only after this, so a Pod being deleted while it
    waits must still stop cleanly (exit 0) instead of dying on the default SIGTERM action.
    """
    config: ClientConfig | None = None
    async with anyio.create_task_group() as tg:

        async def load() -> None:
            nonlocal config
            config = await load_config_retrying(flags.kubeconfig, qps=flags.qps, burst=flags.burst)
            tg.cancel_scope.cancel()

        async def signals() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as received:
                async for signum in received:
                    logger.info("operator.stopped_before_start", signal=signal.Signals(signum).name)
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(signals)
        tg.start_soon(load)
    return config
