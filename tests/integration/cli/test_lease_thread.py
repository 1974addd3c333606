"""A leader whose event loop is stuck keeps its Lease (kuberay_py/manager/lease_thread.py).

The operator's loop is blocked outright (the worst case of a backlog under a CPU quota) for
longer than a whole lease duration, while this test reads the Lease synchronously from the same
blocked thread. The API server runs in its own process (``demo --no-operator``), so blocking this
loop blocks only the operator. With the Lease on its own thread, renewals go on during the block
and the manager still leads afterwards; with it on the operator's loop (the control case) not one
renewal happens while the loop is blocked, so a standby would have taken over.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from pathlib import Path

import pytest

from kuberay_py.client import load_config
from kuberay_py.manager import Manager, ManagerOptions
from tests.integration.cli.procs import Proc, kube_get

LEASE_DURATION = 2.0
BLOCKED_FOR = 2 * LEASE_DURATION


def _renew_times_while_blocked(kubeconfig: Path, lease_path: str) -> set[str]:
    """Block the calling thread (and so its event loop) and collect the Lease's renewTimes."""
    seen: set[str] = set()
    end = time.monotonic() + BLOCKED_FOR
    while time.monotonic() < end:
        seen.add(str(kube_get(kubeconfig, lease_path)["spec"].get("renewTime")))
        time.sleep(0.1)
    return seen


@pytest.mark.parametrize("own_thread", [True, False], ids=["lease-thread", "same-loop"])
async def test_a_blocked_loop_keeps_renewing_the_lease_from_its_own_thread(
    cluster: tuple[Proc, Path], own_thread: bool
) -> None:
    _, kubeconfig = cluster
    lease_id = f"lease-thread-{uuid.uuid4().hex[:8]}"
    options = ManagerOptions(
        metrics_bind_address="0",
        health_probe_bind_address="0",
        leader_election=True,
        leader_election_namespace="default",
        leader_election_id=lease_id,
        lease_duration=LEASE_DURATION,
        renew_deadline=1.5,
        retry_period=0.25,
        leader_election_thread=own_thread,
    )
    mgr = Manager(await load_config(str(kubeconfig)), options)
    run = asyncio.create_task(mgr.run())
    try:
        await asyncio.wait_for(mgr.elected.wait(), 60)
        lease_path = f"/apis/coordination.k8s.io/v1/namespaces/default/leases/{lease_id}"
        renewals = _renew_times_while_blocked(kubeconfig, lease_path)
        if own_thread:
            # A renewal every retry period (0.25 s) all through the block: many distinct times.
            assert len(renewals) >= 4, renewals
            assert mgr.elector is not None and mgr.elector.is_leader()
            assert not run.done()
        else:
            # Nothing renewed while the loop was blocked: the time seen first, and at most one more
            # from a PUT that was already on the wire when the block began.
            assert len(renewals) <= 2, renewals
    finally:
        mgr.stop()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(run, 30)
