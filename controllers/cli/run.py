"""``kuberay-operator run``: the in-cluster operator."""

from __future__ import annotations

import structlog

from kuberay_py import log
from kuberay_py.client import load_config_retrying
from kuberay_py.manager import LeaderElectionLost

from .flags import OperatorFlags
from .operator import build_manager

__all__ = ["run_operator"]

logger = structlog.get_logger("kuberay-operator")


async def run_operator(flags: OperatorFlags) -> int:
    """Exit 0 after a SIGTERM drain; 1 when the lease is lost (the Pod restarts as a standby)."""
    log.configure(flags.log_format, flags.log_level)
    # A broken or missing kubeconfig is logged and retried with back-off rather than crash-looping.
    config = await load_config_retrying(flags.kubeconfig, qps=flags.qps, burst=flags.burst)
    manager = build_manager(config, flags)
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
    logger.info("operator.stopped")
    return 0
