"""The head-proxy health checker: one shared, bounded, event-driven prober of head Pods.

Why a component and not a call in each reconcile: KubeRay checks the head Pod's Serve proxy inside
every RayService reconcile, and reconciles every 2 s, so the probe rate grows with the number of
reconciles and one hanging head blocks a reconcile worker for the full HTTP timeout. Here:

* Reconciles never wait on the network. They read :meth:`HeadProxyHealthChecker.latest` and, if a
  head has no fresh result yet, :meth:`~HeadProxyHealthChecker.request` a check in the background.
* A periodic round (:meth:`~HeadProxyHealthChecker.run`, a leader-only manager runnable) checks
  every head Pod the ``targets`` callable returns, once per ``period``. Worker Pods are never
  probed: the kubelet runs their readiness probe and EndpointSlices carry the result.
* A capacity limiter bounds the HTTP checks in flight (default 16), and a check of a head Pod that
  is already under way is joined rather than repeated (single flight, counted as "coalesced").
* Every check has a hard timeout (2 s) and reads at most 4 KiB of body. Healthy means HTTP 200
  exactly, as KubeRay's ``CheckProxyActorHealth``.
* A check that times out is made once more, at once, before the verdict counts. The operator runs
  on one event loop, under 100m of CPU in KubeRay's chart: a burst of its own work (a 1,000-Pod
  scale-up's watch events, a throttled CFS period) can hold the loop past the deadline while the
  head's answer waits in the socket, and taking a healthy head out of serving for that would be
  the operator causing the outage it exists to prevent. A head that really hangs fails both.
* When a head's healthy/unhealthy verdict *changes* (including its first result), ``on_change`` is
  called with the target, whose ``owner`` lets the caller enqueue the owning RayService.

Example::

    checker = HeadProxyHealthChecker(targets=list_heads, on_change=lambda t, r: enqueue(t.owner))
    manager.add_runnable(checker.run)            # leader-only
    result = checker.latest(pod_uid)             # inside a reconcile: no I/O
    if result is None: checker.request(target)   # first sight of this head: check it soon

With ``kubernetes_proxy`` (``--use-kubernetes-proxy``) each check goes through the API server's
``pods/<pod>:<port>/proxy/-/healthz`` with the operator's credentials and a 10 s timeout, as
KubeRay's proxied HTTP-proxy client; the dashboards' factory hands its setting down.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

import aiohttp
import anyio

from controllers.ray import metrics
from controllers.ray.dashboard import PROXIED_DASHBOARD_TIMEOUT, read_capped
from kuberay_py.client import ClientConfig
from kuberay_py.clock import Clock, RealClock
from kuberay_py.log import get_logger

__all__ = [
    "DEFAULT_CHECK_CONCURRENCY",
    "DEFAULT_CHECK_PERIOD",
    "DEFAULT_CHECK_TIMEOUT",
    "DEFAULT_MAX_BODY_BYTES",
    "PROXY_HEALTH_PATH",
    "HeadProxyHealthChecker",
    "HeadTarget",
    "HealthOutcome",
    "HealthResult",
]

log = get_logger(__name__)

DEFAULT_CHECK_CONCURRENCY = 16
# The same cadence as the kubelet's readiness probe on serve workers (periodSeconds 5), so the
# head leaves and joins the serve Service about as fast as a worker does.
DEFAULT_CHECK_PERIOD = 5.0
DEFAULT_CHECK_TIMEOUT = 2.0
DEFAULT_MAX_BODY_BYTES = 4096
PROXY_HEALTH_PATH = "/-/healthz"


@dataclass(frozen=True)
class HeadTarget:
    """One head Pod to check. ``owner`` is opaque to the checker (the RayService's "ns/name")."""

    namespace: str
    pod_name: str
    pod_uid: str
    ip: str
    port: int
    owner: str

    @property
    def url(self) -> str:
        host = f"[{self.ip}]" if ":" in self.ip else self.ip
        return f"http://{host}:{self.port}{PROXY_HEALTH_PATH}"


# What one probe of a head proxy found; also the ``result`` label of the checks-total metric.
HealthOutcome = Literal["healthy", "unhealthy", "timeout", "error"]


@dataclass(frozen=True)
class HealthResult:
    healthy: bool
    outcome: HealthOutcome
    detail: str
    checked_at: float  # the checker clock's now() when the check started
    address: str  # ip:port that was checked


class HeadProxyHealthChecker:
    def __init__(
        self,
        *,
        targets: Callable[[], Iterable[HeadTarget]] | None = None,
        on_change: Callable[[HeadTarget, HealthResult], None] | None = None,
        max_concurrency: int = DEFAULT_CHECK_CONCURRENCY,
        period: float = DEFAULT_CHECK_PERIOD,
        timeout: float | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        clock: Clock | None = None,
        kubernetes_proxy: ClientConfig | None = None,
    ) -> None:
        if timeout is None:
            timeout = DEFAULT_CHECK_TIMEOUT if kubernetes_proxy is None else PROXIED_DASHBOARD_TIMEOUT
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if period <= 0 or timeout <= 0:
            raise ValueError(f"period and timeout must be > 0, got {period} and {timeout}")
        self._targets = targets
        self.on_change = on_change
        self.period = period
        self.timeout = timeout
        self.max_body_bytes = max_body_bytes
        self.clock: Clock = clock or RealClock()
        self._limiter = anyio.CapacityLimiter(max_concurrency)
        self._results: dict[str, HealthResult] = {}
        self._series: dict[str, tuple[str, str, str]] = {}  # pod uid -> kuberay_head_proxy_healthy labels
        self._in_flight: dict[str, asyncio.Future[HealthResult]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._session: aiohttp.ClientSession | None = None
        self._max_concurrency = max_concurrency
        self.kubernetes_proxy = kubernetes_proxy
        self.rounds = 0

    def url(self, target: HeadTarget) -> str:
        """Where ``target`` is checked: the Pod itself, or its ``pods/proxy`` on the API server."""
        proxy = self.kubernetes_proxy
        if proxy is None:
            return target.url
        host = proxy.host.rstrip("/")
        pod = f"{target.pod_name}:{target.port}"
        return f"{host}/api/v1/namespaces/{target.namespace}/pods/{pod}/proxy{PROXY_HEALTH_PATH}"

    async def _headers(self) -> dict[str, str]:
        proxy = self.kubernetes_proxy
        if proxy is None:
            return {}
        token = (await proxy.token_source() if proxy.token_source is not None else None) or proxy.token
        return {"Authorization": token} if token else {}

    def set_targets(self, targets: Callable[[], Iterable[HeadTarget]]) -> None:
        """What :meth:`run` checks each period (set by whoever knows which heads matter)."""
        self._targets = targets

    # -- reads for reconcilers (no I/O) ------------------------------------------------------

    def latest(self, pod_uid: str) -> HealthResult | None:
        """The most recent result for this head Pod, however old (None before the first check)."""
        return self._results.get(pod_uid)

    def is_fresh(self, pod_uid: str) -> bool:
        result = self._results.get(pod_uid)
        return result is not None and self.clock.now() - result.checked_at < self.period

    def request(self, target: HeadTarget) -> None:
        """Check this head soon unless a fresh result exists or a check is under way; never blocks."""
        if self.is_fresh(target.pod_uid) or target.pod_uid in self._in_flight:
            return
        self._start(target)

    def forget(self, pod_uid: str) -> None:
        self._results.pop(pod_uid, None)
        self._drop_series(pod_uid)

    def _drop_series(self, pod_uid: str) -> None:
        labels = self._series.pop(pod_uid, None)
        if labels is not None:
            metrics.HEAD_PROXY_HEALTHY.remove(*labels)

    # -- checking ----------------------------------------------------------------------------

    async def check(self, target: HeadTarget, *, max_age: float | None = None) -> HealthResult:
        """A result no older than ``max_age`` (default: the period), probing only if needed."""
        limit = self.period if max_age is None else max_age
        cached = self._results.get(target.pod_uid)
        if cached is not None and self.clock.now() - cached.checked_at < limit:
            return cached
        fut = self._in_flight.get(target.pod_uid)
        if fut is not None:
            metrics.HEALTH_CHECKS_COALESCED.inc()
        else:
            fut = self._start(target)
        return await asyncio.shield(fut)

    def _start(self, target: HeadTarget) -> asyncio.Future[HealthResult]:
        fut: asyncio.Future[HealthResult] = asyncio.get_running_loop().create_future()
        self._in_flight[target.pod_uid] = fut
        task = asyncio.get_running_loop().create_task(self._run_check(target, fut))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return fut

    async def _run_check(self, target: HeadTarget, fut: asyncio.Future[HealthResult]) -> None:
        try:
            result = await self._probe(target)
        except asyncio.CancelledError:  # closed: joiners must not hang
            fut.cancel()
            raise
        except Exception as exc:  # a bug, not a probe outcome: surface it to every joiner
            log.exception("head proxy check crashed", pod=target.pod_name)
            fut.set_exception(exc)
            fut.exception()  # mark retrieved; joiners re-raise it themselves
            return
        finally:
            if self._in_flight.get(target.pod_uid) is fut:
                del self._in_flight[target.pod_uid]
        previous = self._results.get(target.pod_uid)
        self._results[target.pod_uid] = result
        labels = (target.namespace, target.pod_name, target.owner.rpartition("/")[2])
        if self._series.get(target.pod_uid, labels) != labels:
            self._drop_series(target.pod_uid)
        self._series[target.pod_uid] = labels
        metrics.HEAD_PROXY_HEALTHY.labels(*labels).set(1 if result.healthy else 0)
        if not fut.done():
            fut.set_result(result)
        if previous is None or previous.healthy != result.healthy:
            log.info(
                "head proxy health changed",
                namespace=target.namespace,
                pod=target.pod_name,
                healthy=result.healthy,
                outcome=result.outcome,
                detail=result.detail,
            )
            if self.on_change is not None:
                try:
                    self.on_change(target, result)
                except Exception:
                    log.exception("head proxy on_change callback failed", pod=target.pod_name)

    async def _probe(self, target: HeadTarget) -> HealthResult:
        """One verdict: an HTTP check, and a second one only when the first timed out."""
        started = self.clock.now()
        address = f"{target.ip}:{target.port}"
        healthy, outcome, detail = await self._attempt(target)
        if outcome == "timeout":
            log.debug("head proxy check timed out; checking once more", pod=target.pod_name)
            healthy, outcome, detail = await self._attempt(target)
            if outcome == "timeout":
                detail += ", twice"
        return HealthResult(healthy, outcome, detail, started, address)

    async def _attempt(self, target: HeadTarget) -> tuple[bool, HealthOutcome, str]:
        """One HTTP check inside the concurrency limit; each is counted in the metrics."""
        async with self._limiter:
            metrics.HEALTH_CHECKS_IN_FLIGHT.inc()
            t0 = time.perf_counter()
            try:
                healthy, outcome, detail = await self._http_check(target)
            finally:
                metrics.HEALTH_CHECKS_IN_FLIGHT.dec()
                metrics.HEALTH_CHECK_DURATION.observe(time.perf_counter() - t0)
        metrics.HEALTH_CHECKS_TOTAL.labels(result=outcome).inc()
        return healthy, outcome, detail

    async def _http_check(self, target: HeadTarget) -> tuple[bool, HealthOutcome, str]:
        try:
            async with self._get_session().get(
                self.url(target),
                headers=await self._headers(),
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                allow_redirects=False,
            ) as resp:
                body, _ = await read_capped(resp, self.max_body_bytes)
                text = body.decode("utf-8", errors="replace").strip()[:200]
                if resp.status == 200:
                    return True, "healthy", text
                return False, "unhealthy", f"HTTP {resp.status}: {text}"
        except TimeoutError:
            return False, "timeout", f"no answer within {self.timeout} s"
        except (aiohttp.ClientError, OSError, asyncio.IncompleteReadError) as exc:
            return False, "error", f"{type(exc).__name__}: {exc}"

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            proxy = self.kubernetes_proxy
            ssl: Any = proxy.ssl_context if proxy is not None and proxy.ssl_context is not None else True
            connector = aiohttp.TCPConnector(
                limit=self._max_concurrency,
                keepalive_timeout=max(15.0, 3 * self.period),
                force_close=False,
                ssl=ssl,
            )
            self._session = aiohttp.ClientSession(connector=connector, trust_env=False)
        return self._session

    # -- the periodic runnable ---------------------------------------------------------------

    async def run(self) -> None:
        """Check every target once per period until cancelled (run it as a leader-only runnable)."""
        if self._targets is None:
            raise RuntimeError("HeadProxyHealthChecker.run needs a targets callable")
        try:
            while True:
                started = self.clock.now()
                await self.run_round()
                await self.clock.sleep(max(0.0, self.period - (self.clock.now() - started)))
        finally:
            with anyio.CancelScope(shield=True):
                await self.close()

    async def run_round(self) -> None:
        """Start one round: a check of every current target (not awaited; reconciles never wait)."""
        assert self._targets is not None
        try:
            targets = list(self._targets())
        except Exception:  # e.g. caches not synced yet: skip this round, keep every result
            log.warning("cannot list head proxy check targets; skipping this round", exc_info=True)
            self.rounds += 1
            return
        metrics.HEALTH_CHECK_TARGETS.set(len(targets))
        self._prune({t.pod_uid for t in targets})
        for target in targets:
            # Results younger than half a period came from an on-demand request: reuse them.
            cached = self._results.get(target.pod_uid)
            if cached is not None and self.clock.now() - cached.checked_at < self.period / 2:
                continue
            if target.pod_uid in self._in_flight:
                metrics.HEALTH_CHECKS_COALESCED.inc()
                continue
            self._start(target)
        self.rounds += 1
        await asyncio.sleep(0)

    def _prune(self, live: set[str]) -> None:
        for uid in [u for u in self._results if u not in live and u not in self._in_flight]:
            # Keep a head that left the target set only briefly (e.g. between cache updates).
            if self.clock.now() - self._results[uid].checked_at >= 2 * self.period:
                del self._results[uid]
                self._drop_series(uid)

    async def wait_idle(self) -> None:
        """Wait until no check is under way (tests and shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None
