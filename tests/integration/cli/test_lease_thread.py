"""A leader whose event loop is stuck keeps its Lease (kuberay_py/manager/lease_thread.py).

The operator's loop is blocked outright (the worst case of a backlog under a CPU quota) while
this test reads the Lease synchronously from the same blocked thread. The API server runs in its
own process (``demo --no-operator``), so blocking this loop blocks only the operator.

Renewals are followed through the elector's renew listener, not by sampling the Lease over wall
time. Both cases first hear one renewal (the elector renews and the listener works), then block
the loop until more renewals are heard or a bound passes:

- with the Lease on its own thread, the renewals arrive while the loop is blocked (the bound is
  only a generous failure deadline) and the Lease in the API server moved on;
- with the Lease on the operator's loop (the control case) none can arrive, by construction:
  the elector runs on the blocked loop. The block lasts two lease durations, and the newest
  renewTime in the API server was stamped before the block began, so any standby would have
  found the Lease expired.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kuberay_py.client import load_config
from kuberay_py.manager import LeaderElectionRecord, Manager, ManagerOptions
from kuberay_py.manager.leaselock import parse_micro_time
from tests.integration.cli.procs import Proc, kube_get

LEASE_DURATION = 2.0
RENEWALS = 4  # heard while blocked, with the Lease on its own thread
DEADLINE = 60.0  # for an awaited renewal: a failure bound, never reached when all is well


class Renewals:
    """A renew listener that counts renewals (from whichever thread renews) and lets a thread
    wait for more of them."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self.count = 0
        self.threads: set[int] = set()

    def __call__(self, record: LeaderElectionRecord) -> None:
        with self._changed:
            self.count += 1
            self.threads.add(threading.get_ident())
            self._changed.notify_all()

    def wait_beyond(self, seen: int, more: int, timeout: float) -> bool:
        """Block the calling thread until ``more`` renewals after the ``seen``-th, or ``timeout``."""
        with self._changed:
            return self._changed.wait_for(lambda: self.count >= seen + more, timeout)


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
    assert mgr.elector is not None
    renewals = Renewals()
    mgr.elector.add_renew_listener(renewals)
    run = asyncio.create_task(mgr.run())
    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/default/leases/{lease_id}"
    try:
        await asyncio.wait_for(mgr.elected.wait(), DEADLINE)
        assert await asyncio.to_thread(renewals.wait_beyond, 0, 1, DEADLINE), "no renewal before the block"
        # From here to the end of the block nothing awaits: this loop is blocked.
        blocked_at = datetime.now(UTC)
        before = kube_get(kubeconfig, lease_path)["spec"]
        # Counted after that read: the second renewal heard from here on was stamped after it.
        seen = renewals.count
        renewed = renewals.wait_beyond(seen, RENEWALS, DEADLINE if own_thread else 2 * LEASE_DURATION)
        after = kube_get(kubeconfig, lease_path)["spec"]
        main = threading.get_ident()
        if own_thread:
            assert renewed, f"{renewals.count - seen} renewals while the loop was blocked"
            assert main not in renewals.threads
            assert after["holderIdentity"] == mgr.elector.identity
            assert after["renewTime"] != before["renewTime"]
            assert mgr.elector.is_leader()
            assert not run.done()
        else:
            assert not renewed and renewals.count == seen
            assert renewals.threads == {main}
            assert parse_micro_time(after["renewTime"]) <= blocked_at, (after, blocked_at)
    finally:
        mgr.stop()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(run, 30)
