"""A kubelet (and a one-node scheduler) for the cluster simulator.

It binds every unscheduled Pod to the simulator's node through ``pods/binding`` as kube-scheduler
does, gives it an address from the simulator's pod network block, starts its "containers" through the
:class:`~kuberay_py.envtest.sim.runtime.PodRuntime`, and then runs its startup, readiness and
liveness probes for real against that address, reporting the results in the Pod's status exactly
where the real kubelet does (container ``ready``/``started``, ``restartCount``, the ``Ready`` and
``ContainersReady`` conditions). A liveness failure restarts the container; a Pod that gets a
``deletionTimestamp`` is stopped and removed with ``gracePeriodSeconds=0``, which is the kubelet's
half of graceful deletion.

Probe loops sleep on the injected clock, and periods are multiplied by ``probe_period_scale`` so
tests can run a 5 s probe in 50 ms, or step it exactly with a FakeClock and
:meth:`Kubelet.probe_rounds` / :meth:`Kubelet.wait_for_probe_rounds`.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

import aiohttp
import anyio

from kuberay_py.client import Client
from kuberay_py.clock import Clock
from kuberay_py.envtest.sim.addresses import AddressAllocator
from kuberay_py.envtest.sim.nodecontext import NodeContext
from kuberay_py.envtest.sim.podworker import PodWorker
from kuberay_py.envtest.sim.prober import ProbeKind
from kuberay_py.envtest.sim.runtime import PodRuntime
from kuberay_py.log import get_logger

__all__ = ["Kubelet"]

log = get_logger("kuberay_py.envtest.sim.kubelet")

_TERMINAL = ("Succeeded", "Failed")


class Kubelet:
    """Runs every Pod bound (or bindable) to ``node_name``; fed Pod events through EventHandler methods."""

    def __init__(
        self,
        client: Client,
        *,
        clock: Clock,
        pod_runtime: PodRuntime | None = None,
        probe_period_scale: float = 1.0,
        node_name: str = "sim-node",
        host_ip: str = "127.0.0.1",
        addresses: AddressAllocator,
    ) -> None:
        if probe_period_scale <= 0:
            raise ValueError("probe_period_scale must be > 0")
        self.client = client
        self.clock = clock
        self.runtime = pod_runtime
        self.scale = probe_period_scale
        self.node_name = node_name
        self.host_ip = host_ip
        self.addresses = addresses
        self._workers: dict[str, PodWorker] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._rounds: dict[tuple[str, str, str, str], int] = defaultdict(int)
        self._round_waiters: list[tuple[tuple[str, str, str, str | None], int, asyncio.Future[None]]] = []
        self._session: aiohttp.ClientSession | None = None
        self.node = NodeContext(
            client=client,
            clock=clock,
            runtime=pod_runtime,
            scale=probe_period_scale,
            node_name=node_name,
            host_ip=host_ip,
            addresses=addresses,
            session=lambda: self.session,
            spawn=self._spawn,
            round_done=self._round_done,
            release_worker=self._release_worker,
        )

    # -- EventHandler -------------------------------------------------------------------------
    def on_add(self, obj: dict[str, Any], is_initial: bool) -> None:
        self._dispatch(obj)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self._dispatch(new)

    def on_delete(self, obj: dict[str, Any]) -> None:
        self.node.terminated.discard(obj.get("metadata", {}).get("uid", ""))
        worker = self._workers.pop(obj.get("metadata", {}).get("uid", ""), None)
        if worker is not None:
            worker.removed()

    # -- lifecycle ----------------------------------------------------------------------------
    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            # The kubelet opens a new connection for every probe (no keep-alive), so a stopped
            # listener is noticed at once instead of through a stale pooled connection.
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True, limit=0))
        return self._session

    async def run(self) -> None:
        """Keeps the workers alive; on cancellation stops every Pod's runtime."""
        try:
            await asyncio.Event().wait()
        finally:
            # anyio cancellation is level-triggered: shield the clean-up or its awaits are cancelled too
            with anyio.CancelScope(shield=True):
                for worker in list(self._workers.values()):
                    worker.removed()
                if self._tasks:
                    await asyncio.gather(*self._tasks, return_exceptions=True)
                if self._session is not None:
                    await self._session.close()
                    self._session = None

    def _release_worker(self, uid: str, worker: object) -> None:
        if self._workers.get(uid) is worker:
            del self._workers[uid]

    def _spawn(self, coro: Any) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("kubelet task failed", exc_info=task.exception())

    def _dispatch(self, pod: dict[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        uid = meta.get("uid", "")
        spec = pod.get("spec") or {}
        node = spec.get("nodeName")
        worker = self._workers.get(uid)
        if worker is not None:
            worker.update(pod)
            return
        if uid in self.node.terminated:
            return  # stopped and deleted; only finalizers keep it in the API now
        if node and node != self.node_name:
            return
        if not node and spec.get("schedulerName", "default-scheduler") != "default-scheduler":
            return
        if (pod.get("status") or {}).get("phase") in _TERMINAL and not meta.get("deletionTimestamp"):
            return
        worker = PodWorker(self.node, pod)
        self._workers[uid] = worker
        worker.task = self._spawn(worker.run())

    # -- probe round bookkeeping (lets tests step probes deterministically) ----------------------
    def probe_rounds(self, namespace: str, name: str, kind: ProbeKind, container: str | None = None) -> int:
        """How many probe attempts of ``kind`` have completed (and been reported) for the Pod."""
        return sum(
            n
            for (ns, nm, c, k), n in self._rounds.items()
            if ns == namespace and nm == name and k == kind and (container is None or c == container)
        )

    async def wait_for_probe_rounds(
        self, namespace: str, name: str, kind: ProbeKind, count: int, container: str | None = None
    ) -> None:
        if self.probe_rounds(namespace, name, kind, container) >= count:
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._round_waiters.append(((namespace, name, kind, container), count, fut))
        await fut

    def _round_done(self, namespace: str, name: str, container: str, kind: str) -> None:
        self._rounds[(namespace, name, container, kind)] += 1
        still: list[tuple[tuple[str, str, str, str | None], int, asyncio.Future[None]]] = []
        for key, count, fut in self._round_waiters:
            ns, nm, k, c = key
            if fut.done():
                continue
            if self.probe_rounds(ns, nm, k, c) >= count:  # type: ignore[arg-type]
                fut.set_result(None)
            else:
                still.append((key, count, fut))
        self._round_waiters = still
