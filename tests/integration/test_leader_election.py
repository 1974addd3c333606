"""Two real Managers contend for one Lease in the envtest API server.

Both managers share a FakeClock, so lease arithmetic runs on virtual time: the test advances it
exactly to the standby's next attempt, and the hand-over bound is checked in virtual seconds
(deterministic, no wall-clock threshold). Every API call, watch and reconcile is real. The
reconcilers write ``reconciled-by`` into each ConfigMap, so who ran controllers is read back
from the API server.

The standby starts only once the first manager leads: of two candidates started together, which
one creates the Lease is a race on a real kube-apiserver, and the loser's retry sleeps on the
virtual clock, which nothing advances before the test knows who leads.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from kuberay_py.client import Client, resources
from kuberay_py.clock import FakeClock, parse_rfc3339
from kuberay_py.controller import Request, Result
from kuberay_py.envtest import Environment
from kuberay_py.manager import Manager, ManagerOptions
from kuberay_py.manager.leaderelection import JITTER_FACTOR
from tests.polling import eventually

WAIT = 20.0  # bound for real I/O to settle on a loaded machine; not a performance assertion


async def until(cond: Callable[[], Awaitable[Any] | Any], what: str) -> Any:
    return await eventually(cond, what, WAIT, tolerate=())


class Stamp:
    """Annotates each reconciled ConfigMap with this manager's identity."""

    def __init__(self, client: Client, who: str) -> None:
        self.client = client
        self.who = who
        self.requests: list[Request] = []

    async def reconcile(self, request: Request) -> Result:
        self.requests.append(request)
        patch = {"metadata": {"annotations": {"reconciled-by": self.who}}}
        await self.client.patch(resources.CONFIGMAPS, request.name, patch, request.namespace)
        return Result()


def make_manager(
    env: Environment, namespace: str, lease: str, who: str, clock: FakeClock
) -> tuple[Manager, Stamp]:
    opts = ManagerOptions(
        metrics_bind_address="0",
        health_probe_bind_address="127.0.0.1:0",
        leader_election=True,
        leader_election_namespace=namespace,
        leader_election_id=lease,
        leader_election_identity=who,
        namespaces=[namespace],
    )
    mgr = Manager(env.client_config, opts, clock=clock)
    stamp = Stamp(mgr.client, who)
    mgr.controller(f"{lease}-{who}").for_(resources.CONFIGMAPS).complete(stamp)
    return mgr, stamp


async def reconciled_by(k8s: Client, namespace: str, name: str) -> str:
    cm = await k8s.get(resources.CONFIGMAPS, name, namespace)
    return str((cm["metadata"].get("annotations") or {}).get("reconciled-by", ""))


async def ready(mgr: Manager) -> bool:
    if mgr.health_url is None:  # its health server has not started yet
        return False
    async with aiohttp.ClientSession() as s, s.get(f"{mgr.health_url}/readyz") as resp:
        return resp.status == 200


async def next_attempt(mgr: Manager, clock: FakeClock) -> None:
    """Advance virtual time to the standby's next attempt and wait for that attempt to finish."""
    elector = mgr.elector
    assert elector is not None
    await until(lambda: elector.next_attempt_at is not None or mgr.elected.is_set(), "standby to sleep")
    if mgr.elected.is_set():
        return
    assert elector.next_attempt_at is not None
    before = elector.attempts
    await clock.advance(max(0.0, elector.next_attempt_at - clock.now()))
    await until(
        lambda: elector.attempts > before and (elector.next_attempt_at is not None or mgr.elected.is_set()),
        "the attempt to finish",
    )


@contextlib.asynccontextmanager
async def started(mgr: Manager) -> Any:
    task = asyncio.create_task(mgr.run(install_signal_handlers=False))
    try:
        yield task
    finally:
        if not task.done():
            task.cancel()
        with contextlib.suppress(BaseException):
            await task


async def test_only_the_leader_runs_controllers_and_a_crash_hands_over_after_the_lease(
    envtest: Environment, k8s: Client, namespace: str
) -> None:
    clock = FakeClock()
    a, stamp_a = make_manager(envtest, namespace, "le-crash", "a", clock)
    b, stamp_b = make_manager(envtest, namespace, "le-crash", "b", clock)
    async with started(a) as run_a:
        await asyncio.wait_for(a.elected.wait(), WAIT)
        async with started(b):
            await until(lambda: ready(b), "the standby to be ready (caches synced)")
            await next_attempt(b, clock)  # b has seen a's lease
            assert b.elector is not None and b.elector.leader() == "a"

            await k8s.create(resources.CONFIGMAPS, {"metadata": {"name": "cm1"}}, namespace)
            await until(lambda: reconciled_by(k8s, namespace, "cm1"), "the leader to reconcile cm1")
            assert await reconciled_by(k8s, namespace, "cm1") == "a"
            assert not b.elected.is_set()
            assert stamp_b.requests == []
            assert not b.controllers["le-crash-b"].started
            lease = await k8s.get(resources.LEASES, "le-crash", namespace)
            assert lease["spec"]["holderIdentity"] == "a"
            assert lease["spec"]["leaseDurationSeconds"] == 15

            # Crash the leader: its task is cancelled, nothing is released.
            run_a.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run_a
            lease = await k8s.get(resources.LEASES, "le-crash", namespace)
            assert lease["spec"]["holderIdentity"] == "a"
            # a's last renewal may have raced b's last read (on a real kube-apiserver either can
            # land first), so b may not have seen it yet. a is gone now: b's next read sees the
            # final record, and the lease runs from that observation, as in client-go.
            await next_attempt(b, clock)
            assert not b.elected.is_set()
            assert b.elector.observed_record.renew_time == parse_rfc3339(lease["spec"]["renewTime"])
            observed = b.elector.observed_time  # when b saw the final record

            while not b.elected.is_set():
                await next_attempt(b, clock)
                assert b.elected.is_set() or clock.now() < observed + 15.0 + 2.0 * (1 + JITTER_FACTOR)
            took_over = clock.now()
            assert took_over >= observed + 15.0, "took the lease before it expired"
            assert took_over <= observed + 15.0 + 2.0 * (1 + JITTER_FACTOR)  # lease duration + one retry

            lease = await k8s.get(resources.LEASES, "le-crash", namespace)
            assert lease["spec"]["holderIdentity"] == "b"
            assert lease["spec"]["leaseTransitions"] == 1
            await until(lambda: stamp_b.requests, "the new leader to reconcile")
            await k8s.patch(resources.CONFIGMAPS, "cm1", {"data": {"k": "v"}}, namespace)
            await until(lambda: _eq(reconciled_by(k8s, namespace, "cm1"), "b"), "the new leader to own cm1")
            assert len(stamp_a.requests) >= 1


async def _eq(value: Awaitable[str], expected: str) -> bool:
    return await value == expected


async def test_a_clean_stop_releases_the_lease_and_the_standby_takes_over_at_its_next_retry(
    envtest: Environment, k8s: Client, namespace: str
) -> None:
    clock = FakeClock()
    a, _ = make_manager(envtest, namespace, "le-release", "a", clock)
    b, stamp_b = make_manager(envtest, namespace, "le-release", "b", clock)
    async with started(a) as run_a:
        await asyncio.wait_for(a.elected.wait(), WAIT)
        async with started(b) as run_b:
            await next_attempt(b, clock)
            assert not b.elected.is_set()

            a.stop()
            await asyncio.wait_for(run_a, WAIT)  # returns normally: the CLI exits 0
            lease = await k8s.get(resources.LEASES, "le-release", namespace)
            assert lease["spec"]["holderIdentity"] == ""
            assert lease["spec"]["leaseDurationSeconds"] == 1

            start = clock.now()
            await next_attempt(b, clock)  # no lease-duration wait after a release
            assert b.elected.is_set()
            assert clock.now() - start <= 2.0 * (1 + JITTER_FACTOR)
            await k8s.create(resources.CONFIGMAPS, {"metadata": {"name": "cm2"}}, namespace)
            await until(lambda: _eq(reconciled_by(k8s, namespace, "cm2"), "b"), "b to reconcile")
            assert stamp_b.requests

            b.stop()
            await asyncio.wait_for(run_b, WAIT)
            lease = await k8s.get(resources.LEASES, "le-release", namespace)
            assert lease["spec"]["holderIdentity"] == ""
            assert lease["spec"]["leaseTransitions"] == 1
