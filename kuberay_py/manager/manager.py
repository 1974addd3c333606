"""The manager: one process's client, cache, controllers, servers, lease and shutdown.

Start order (controller-runtime's ``cm.Start``): HTTP servers (metrics, probes) first, so probes
answer while the rest warms up; then the admission webhook servers (on every replica, leader or
not: kube-apiserver calls whichever one the Service picks); then the caches, and ``/readyz``
turns ready once they have synced; then the runnables that do not need leadership (the event
writer among them); then, with leader election on, the Lease is acquired and only then do
controllers and other leader-only runnables start.

Stop order, on :meth:`Manager.stop`, SIGTERM/SIGINT, or a runnable failing: ``/readyz`` turns
unready first (so the Service stops routing here), then non-leader runnables and controllers are
asked to finish — reconciles in flight complete, nothing new starts — within
``graceful_shutdown_timeout``; then the lease is released (after the controllers, so no
successor reconciles alongside us), pending events get a last chance to be written, caches stop,
webhook servers close (letting admission requests in flight finish), and the HTTP servers close
last. :meth:`run` then returns normally (exit code 0).

Losing the lease is different: another process may already be reconciling, so everything is
cancelled at once (controller-runtime sets the timeout to 0) and :meth:`run` raises
:class:`LeaderElectionLost`; the process must exit non-zero and be restarted as a candidate.
A second SIGTERM/SIGINT while draining cancels the drain, like controller-runtime's second signal.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar

import anyio
from aiohttp import web

from kuberay_py.cache import Cache
from kuberay_py.client import Client, ClientConfig
from kuberay_py.clock import Clock, RealClock
from kuberay_py.controller import Builder, Controller
from kuberay_py.httpserver import HTTPServer
from kuberay_py.log import get_logger
from kuberay_py.manager.cache_sync import cache_sync_timeout
from kuberay_py.manager.events import EventBroadcaster, EventRecorder
from kuberay_py.manager.healthz import Checker, HealthChecks, ping
from kuberay_py.manager.leaderelection import MASTER_STATUS, LeaderElector
from kuberay_py.manager.lease_thread import LeaseThread
from kuberay_py.manager.leaselock import LeaseLock
from kuberay_py.manager.options import ManagerOptions
from kuberay_py.manager.runnables import RunnableGroup, wait_or_timeout
from kuberay_py.manager.servers import metrics_app
from kuberay_py.workqueue import RateLimiter, default_rate_limiter

__all__ = ["LeaderElectionLost", "Manager"]

T = TypeVar("T")

log = get_logger(__name__)

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


class WebhookServer(Protocol):
    """What the manager needs of an admission webhook server (kuberay_py.webhook.WebhookServer)."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class LeaderElectionLost(RuntimeError):
    """The lease could not be renewed: stop now and let the process restart (exit non-zero)."""


def _leader_election_namespace(options: ManagerOptions) -> str:
    if options.leader_election_namespace:
        return options.leader_election_namespace
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text().strip()
    except OSError:
        raise ValueError(
            "unable to find leader election namespace: not running in-cluster, "
            "please set leader_election_namespace (--leader-election-namespace)"
        ) from None


class Manager:
    """Runs caches, controllers and runnables; see the module docstring for the lifecycle.

    Example::

        mgr = Manager(await load_config(), ManagerOptions(leader_election=True,
                                                           leader_election_namespace="ray-system"))
        mgr.controller("raycluster").for_(RAYCLUSTERS).owns(PODS).complete(reconciler)
        await mgr.run()   # returns on SIGTERM after draining; raises LeaderElectionLost
    """

    def __init__(
        self, config: ClientConfig, options: ManagerOptions | None = None, *, clock: Clock | None = None
    ) -> None:
        self.options = options = options or ManagerOptions()
        self.clock: Clock = clock or RealClock()
        self._retry_limiter()  # bad retry options fail here, not at the first controller
        self.client = Client(config, clock=self.clock)
        self.cache = Cache(
            self.client,
            namespaces=options.namespaces,
            selectors=options.cache_selectors,
            transforms=options.cache_transforms,
            resync_period=options.sync_period,
            clock=self.clock,
        )
        # Events get their own client, hence their own QPS/burst bucket, as controller-runtime's
        # recorder provider builds its own events/v1 clientset from the rest config: an event
        # storm must not delay the controllers' Pod creates and status writes.
        self.events_client = Client(config, clock=self.clock)
        self.events = EventBroadcaster(
            self.events_client, clock=self.clock, max_pending=options.event_buffer_size
        )
        self.elector: LeaderElector | None = None
        self.lease_client: Client | None = None  # the Lease's client (self.client unless threaded)
        self._lease_thread: LeaseThread | None = None
        if options.leader_election:
            # On the real clock the Lease is renewed from a thread of its own, with its own client,
            # so a busy loop cannot starve renewals (lease_thread.py); virtual time is one loop's.
            threaded = options.leader_election_thread and isinstance(self.clock, RealClock)
            self.lease_client = lease_client = Client(config, clock=self.clock) if threaded else self.client
            lock = LeaseLock(
                lease_client,
                _leader_election_namespace(options),
                options.leader_election_id,
                options.leader_election_identity,
            )
            if threaded:
                name = f"leader-election:{options.leader_election_id}"
                self._lease_thread = LeaseThread(name, lease_client)
            self.elector = LeaderElector(
                lock,
                name=options.leader_election_id,
                lease_duration=options.lease_duration,
                renew_deadline=options.renew_deadline,
                retry_period=options.retry_period,
                clock=self.clock,
            )
        self.healthz = HealthChecks("/healthz")
        self.readyz = HealthChecks("/readyz")
        self.healthz.add("ping", ping)
        self.readyz.add("informer-sync", self._check_synced)
        self.readyz.add("shutdown", self._check_not_stopping)
        health_app = web.Application()
        self.healthz.install(health_app)
        self.readyz.install(health_app)
        self._metrics_server = HTTPServer("metrics", metrics_app(), options.metrics_bind_address)
        self._health_server = HTTPServer("health", health_app, options.health_probe_bind_address)

        self._errors: list[BaseException] = []
        self._caches = RunnableGroup("caches", self._runnable_failed)
        self._others = RunnableGroup("others", self._runnable_failed)
        self._event_writer = RunnableGroup("events", self._runnable_failed)
        self._leader = RunnableGroup("leader-election", self._runnable_failed)
        self._controllers: dict[str, Controller] = {}
        self._webhook_servers: list[WebhookServer] = []
        self._stop_requested = asyncio.Event()
        self._force = asyncio.Event()
        self._synced = False
        self._stopping = False
        self._lost = False
        self._running = False
        self._hold_scope: anyio.CancelScope | None = None  # made in run(): needs a running loop
        self._startup_scope: anyio.CancelScope | None = None
        self.elected = asyncio.Event()  # set once leader-only runnables have been started

    # -- registration --------------------------------------------------------------------------

    def controller(self, name: str) -> Builder:
        """A builder whose finished controller this manager runs (after winning the lease)."""
        if name in self._controllers:
            raise ValueError(f"controller name {name!r} is already used; names must be unique")
        return Builder(
            name,
            self.cache,
            clock=self.clock,
            rate_limiter_factory=self._retry_limiter,
            on_complete=self._add_controller,
        )

    def _retry_limiter(self) -> RateLimiter:
        return default_rate_limiter(
            clock=self.clock, qps=self.options.reconcile_retry_qps, burst=self.options.reconcile_retry_burst
        )

    def _add_controller(self, controller: Controller) -> None:
        if controller.name in self._controllers:
            raise ValueError(f"controller name {controller.name!r} is already used; names must be unique")
        self._controllers[controller.name] = controller
        self._leader.add(f"controller:{controller.name}", controller.run, stop=controller.stop)

    @property
    def controllers(self) -> dict[str, Controller]:
        return dict(self._controllers)

    def add_runnable(
        self,
        fn: Callable[[], Awaitable[None]],
        *,
        needs_leader_election: bool = True,
        name: str | None = None,
        stop: Callable[[], None] | None = None,
    ) -> None:
        """Run ``fn`` with the manager. Leader-only runnables start after the lease is won.

        ``stop`` (optional) is called at shutdown to ask ``fn`` to finish on its own; otherwise it
        is cancelled once the others have drained or the graceful timeout has passed.
        """
        group = self._leader if needs_leader_election else self._others
        group.add(name or str(getattr(fn, "__qualname__", repr(fn))), fn, stop=stop)

    def add_webhook_server(self, server: WebhookServer) -> None:
        """Serve admission webhooks with the manager: started before the caches, on every replica."""
        if self._running:
            raise RuntimeError("add webhook servers before the manager runs")
        self._webhook_servers.append(server)

    def add_healthz_check(self, name: str, check: Checker) -> None:
        self.healthz.add(name, check)

    def add_readyz_check(self, name: str, check: Checker) -> None:
        self.readyz.add(name, check)

    def event_recorder(self, component: str) -> EventRecorder:
        return self.events.recorder(component)

    # -- state -----------------------------------------------------------------------------------

    @property
    def metrics_url(self) -> str | None:
        return self._metrics_server.url

    @property
    def health_url(self) -> str | None:
        return self._health_server.url

    @property
    def is_leader(self) -> bool:
        return self.elector is None or self.elector.is_leader()

    def _check_synced(self) -> None:
        if not self._synced:
            raise RuntimeError("caches have not synced yet")

    def _check_not_stopping(self) -> None:
        if self._stopping:
            raise RuntimeError("shutting down")

    def _runnable_failed(self, name: str, err: BaseException) -> None:
        self._errors.append(err)
        self._stop_requested.set()

    def stop(self) -> None:
        """Begin a graceful shutdown; :meth:`run` returns once it is complete. Safe to call twice."""
        self._stopping = True
        self._stop_requested.set()

    def _on_signal(self, signum: int) -> None:
        if self._stop_requested.is_set():
            log.warning(
                "second signal received, cancelling the graceful shutdown", signal=signal.Signals(signum).name
            )
            self._force.set()
            return
        log.info("signal received, shutting down", signal=signal.Signals(signum).name)
        self.stop()

    @contextmanager
    def _signal_handlers(self, install: bool) -> Iterator[None]:
        if not install:
            yield
            return
        loop = asyncio.get_running_loop()
        previous: dict[signal.Signals, Any] = {}
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                previous[sig] = signal.getsignal(sig)
                loop.add_signal_handler(sig, self._on_signal, sig)
            except (ValueError, RuntimeError, NotImplementedError) as err:  # not the main thread
                previous.pop(sig, None)
                log.warning(
                    "cannot install signal handler; stop the manager with stop()",
                    signal=sig.name,
                    error=str(err),
                )
        try:
            yield
        finally:
            for sig, handler in previous.items():
                loop.remove_signal_handler(sig)
                if handler is not None:
                    signal.signal(sig, handler)  # give back whatever was there (pytest's, anyio's)

    # -- running ---------------------------------------------------------------------------------

    async def run(self, *, install_signal_handlers: bool = True) -> None:
        """Run until :meth:`stop`, SIGTERM/SIGINT, a runnable's failure, or the loss of the lease."""
        if self._running:
            raise RuntimeError("the manager is already running")
        if self._leader.stopped:
            raise RuntimeError("a manager cannot be restarted; build a new one")
        self._running = True
        self._hold_scope = anyio.CancelScope()
        self._startup_scope = anyio.CancelScope()
        try:
            await self._health_server.start()
            await self._metrics_server.start()
            for webhooks in self._webhook_servers:
                await webhooks.start()
            with self._signal_handlers(install_signal_handlers):
                async with anyio.create_task_group() as root:
                    for group in (self._caches, self._others, self._event_writer, self._leader):
                        await root.start(group.serve)
                    root.start_soon(self._start_up_scoped, root, name="manager:start-up")
                    await self._stop_requested.wait()
                    await self._shut_down()
                    root.cancel_scope.cancel()
        finally:
            for webhooks in reversed(self._webhook_servers):
                await webhooks.stop()
            await self._metrics_server.stop()
            await self._health_server.stop()
            await self.events_client.close()
            await self.client.close()
            self._running = False
        if self._lost:
            raise LeaderElectionLost(f"leader election lost: lease {self.options.leader_election_id}")
        if self._errors:
            raise self._errors[0]
        log.info("manager stopped")

    async def _start_up_scoped(self, root: anyio.abc.TaskGroup) -> None:
        assert self._startup_scope is not None
        with self._startup_scope:
            await self._start_up(root)

    async def _start_up(self, root: anyio.abc.TaskGroup) -> None:
        try:
            self._caches.add("cache", self.cache.run)
            self._caches.start()
            synced = await self.cache.wait_for_cache_sync(timeout=self.options.cache_sync_timeout)
            if not synced:
                raise cache_sync_timeout(self.cache, self.options.cache_sync_timeout)
            self._synced = True
            log.info("caches synced")
            self._event_writer.add("event-writer", self.events.run)
            self._event_writer.start()
            self._others.start()
            if self.elector is not None:
                await self._on_lease_loop(self.elector.acquire)
                root.start_soon(self._hold_lease, name="manager:lease")
            log.info("starting leader-election runnables", controllers=sorted(self._controllers))
            self._leader.start()
            self.elected.set()
        except Exception as err:
            log.error("manager failed to start", exc_info=err)
            self._runnable_failed("start-up", err)

    async def _hold_lease(self) -> None:
        assert self.elector is not None and self._hold_scope is not None
        with self._hold_scope:
            await self._on_lease_loop(self.elector.hold)
        if self._hold_scope.cancel_called:
            return
        # Lost, possibly in the middle of a graceful drain: stop reconciling at once either way.
        log.error(
            "leader election lost, stopping at once",
            lease=self.options.leader_election_id,
            during_shutdown=self._stopping,
        )
        self._lost = True
        self._force.set()
        self._stop_requested.set()

    async def _shut_down(self) -> None:
        self._stopping = True
        if self._startup_scope is not None:
            self._startup_scope.cancel()  # e.g. still waiting for caches or for the lease
        timeout: float | None = self.options.graceful_shutdown_timeout
        if self._lost:
            timeout = 0.0  # someone else may be leading already: do not reconcile one more step
        deadline = None if timeout is None or timeout < 0 else self.clock.now() + timeout

        def remaining() -> float | None:
            return None if deadline is None else max(0.0, deadline - self.clock.now())

        log.info("stopping: draining runnables", graceful_shutdown_timeout=timeout)
        others = self._others.stop(remaining(), self.clock, abort=self._force)
        leaders = self._leader.stop(remaining(), self.clock, abort=self._force)
        results = await asyncio.gather(others, leaders)
        if self._hold_scope is not None:
            self._hold_scope.cancel()  # stop renewing only now, so no successor overlapped the drain
        if self.elector is not None and self.elector.is_leader() and not self._lost:
            if self.options.leader_election_release_on_cancel:
                await self._on_lease_loop(self.elector.release)
        # Let events emitted during the drain reach the API server if there is time left.
        if not self._lost:
            await wait_or_timeout([self.events.flush()], remaining(), self.clock, abort=self._force)
        await self._event_writer.stop(0, self.clock)
        await self._caches.stop(0, self.clock)
        if not all(results):
            log.warning("graceful shutdown timed out; in-flight work was cancelled")
        if self.elector is not None:
            MASTER_STATUS.labels(name=self.elector.name).set(0)
        if self._lease_thread is not None:
            await self._lease_thread.close()

    async def _on_lease_loop(self, fn: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run an elector coroutine where the Lease lives: its own thread, or this loop."""
        if self._lease_thread is not None:
            return await self._lease_thread.run(fn)
        return await fn()
