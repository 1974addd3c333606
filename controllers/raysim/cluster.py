"""One fake Ray cluster: its nodes' HTTP listeners and the clock-driven Serve controller.

Each node binds, on its Pod's address, the dashboard agent (raylet health, unified ``/api/healthz``)
and, on the head, the dashboard (GCS health and the Serve REST API). The Serve proxy listener on
``http_options.port`` exists exactly while the Serve controller wants a proxy on that node: always on
the head once Serve runs, on a worker while it holds a replica, and then through the drain window,
after which the port refuses connections. A background task calls :meth:`RayClusterSim.tick`
whenever something is due; tests on a FakeClock can call ``tick()`` themselves after advancing it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import traceback
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from controllers.raysim.apps import AppRegistry, respond
from controllers.raysim.job_api import add_job_routes
from controllers.raysim.jobs import JobTable
from controllers.raysim.node import RayNodeSpec
from controllers.raysim.schema import ValidationError, validate_config
from controllers.raysim.serve_doc import serve_details
from controllers.raysim.serve_state import Node, ServeController, Timings
from kuberay_py.clock import Clock
from kuberay_py.log import get_logger

__all__ = ["NodeFaults", "RayClusterSim"]

log = get_logger("controllers.raysim")

AUTH_HEADER = "x-ray-authorization"
AUTH_COOKIE = "ray-authentication-token"
DRAINING_MESSAGE = "This node is being drained."
NO_ROUTES_MESSAGE = "Route table is not populated yet."
NO_REPLICAS_MESSAGE = "No replicas are available yet."
_TEXT = "application/text"


class NodeFaults:
    """Switches tests flip to make a node misbehave the way real ones do.

    ``raylet_down``: agent health endpoints answer 503. ``gcs_down``: ``/api/gcs_healthz`` answers
    503. ``proxy_unhealthy``: the proxy's ``/-/healthz`` answers 503. ``dashboard_hang``: the
    dashboard accepts requests and never answers (until switched off). ``dashboard_error``: every
    Serve API call gets a 500.
    """

    def __init__(self) -> None:
        self.raylet_down = False
        self.gcs_down = False
        self.proxy_unhealthy = False
        self.dashboard_error = False
        self._answering = asyncio.Event()
        self._answering.set()

    @property
    def dashboard_hang(self) -> bool:
        return not self._answering.is_set()

    @dashboard_hang.setter
    def dashboard_hang(self, value: bool) -> None:
        if value:
            self._answering.clear()
        else:
            self._answering.set()

    async def wait_dashboard_answering(self) -> None:
        await self._answering.wait()


class _Listener:
    def __init__(self, app: web.Application, host: str, port: int) -> None:
        self.runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=0.5)
        self.host, self.port = host, port

    async def start(self) -> None:
        await self.runner.setup()
        await web.TCPSite(self.runner, self.host, self.port, reuse_address=True).start()

    async def stop(self) -> None:
        await self.runner.cleanup()


@dataclass
class _NodeRuntime:
    spec: RayNodeSpec
    node: Node
    faults: NodeFaults
    listeners: list[_Listener]
    proxy: _Listener | None = None


class RayClusterSim:
    def __init__(
        self, namespace: str, name: str, *, clock: Clock, timings: Timings, registry: AppRegistry
    ) -> None:
        self.namespace, self.name = namespace, name
        self.clock = clock
        self.controller = ServeController(registry, timings)
        self.jobs = JobTable(clock)
        self.nodes: dict[str, _NodeRuntime] = {}
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._rr = 0
        self.request_waiting = asyncio.Event()  # set when a proxy request waits for a replica (tests)

    # -- membership --------------------------------------------------------------------------
    async def add_node(self, spec: RayNodeSpec, ip: str) -> str:
        node_id = hashlib.sha256(f"{spec.pod_uid}/{ip}".encode()).hexdigest()[:56]
        node = Node(node_id, ip, spec.is_head, spec.num_cpus, spec.pod_name)
        rt = _NodeRuntime(spec, node, NodeFaults(), [])
        rt.listeners.append(_Listener(self._agent_app(rt), ip, spec.agent_port))
        if spec.is_head:
            rt.listeners.append(_Listener(self._dashboard_app(rt), ip, spec.dashboard_port))
        started: list[_Listener] = []
        try:
            for listener in rt.listeners:
                await listener.start()
                started.append(listener)
        except OSError:
            for listener in started:
                await listener.stop()
            raise
        async with self._lock:
            if spec.is_head:
                self.controller.reset()  # a new head means a new GCS and no Serve state
                self.jobs.reset()  # ... and an empty job table
            self.nodes[node_id] = rt
            self.controller.add_node(node)
        self._ensure_loop()
        self._wake.set()
        log.info("ray node started", cluster=f"{self.namespace}/{self.name}", pod=spec.pod_name, ip=ip)
        return node_id

    async def remove_node(self, node_id: str) -> None:
        rt = self.nodes.pop(node_id, None)
        if rt is None:
            return
        async with self._lock:
            self.controller.remove_node(node_id)
            if rt.spec.is_head:
                self.controller.reset()
        for listener in [*rt.listeners, *([rt.proxy] if rt.proxy else [])]:
            await listener.stop()
        rt.proxy = None
        await self._sync_proxies()
        self._notify()
        if not self.nodes and self._task is not None:
            self._task.cancel()
            self._task = None

    async def drain_node(self, node_id: str) -> None:
        """Drain a node whose Pod is terminating (SIGTERM to ``ray start --block``).

        Its proxy goes DRAINING at once (503 ``This node is being drained.`` while still
        forwarding), Serve starts replacements for its replicas elsewhere and stops the local ones
        once those run; the call returns when neither replicas nor the proxy are left on the node
        (Ray 2.60: 3 s for an idle node, ~31 s with a replica). The head is not drained.
        """
        rt = self.nodes.get(node_id)
        if rt is None or rt.spec.is_head:
            return
        async with self._lock:
            self.controller.draining.add(node_id)
        await self.tick()
        self._wake.set()  # the background loop re-plans its next deadline (replica start, drain end)
        while not self.controller.node_drained(node_id) and node_id in self.nodes:
            await self._changed.wait()  # every tick replaces and sets this event

    def head_ip(self) -> str | None:
        return next((rt.node.ip for rt in self.nodes.values() if rt.spec.is_head), None)

    def node_for_pod(self, pod_name: str) -> str | None:
        return next((nid for nid, rt in self.nodes.items() if rt.spec.pod_name == pod_name), None)

    def faults(self, pod_name: str) -> NodeFaults:
        nid = self.node_for_pod(pod_name)
        if nid is None:
            raise KeyError(f"no Ray node for pod {pod_name!r} in cluster {self.namespace}/{self.name}")
        return self.nodes[nid].faults

    # -- time --------------------------------------------------------------------------------
    async def tick(self) -> float | None:
        """Apply every transition due now and (un)bind proxies to match; returns the next deadline."""
        async with self._lock:
            due = self.controller.tick(self.clock.now(), self.clock.utcnow().timestamp())
        await self._sync_proxies()
        self._notify()
        return due

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def _ensure_loop(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._loop())

    async def _loop(self) -> None:
        while True:
            due = await self.tick()
            waiters: list[asyncio.Future[Any]] = [asyncio.ensure_future(self._wake.wait())]
            if due is not None:
                waiters.append(asyncio.ensure_future(self.clock.sleep(max(0.0, due - self.clock.now()))))
            try:
                await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for w in waiters:
                    w.cancel()
            self._wake.clear()

    async def _sync_proxies(self) -> None:
        port = int(self.controller.http_options.get("port", 8000) or 8000)
        for nid, rt in list(self.nodes.items()):
            want = nid in self.controller.proxies
            if want and rt.proxy is None:
                listener = _Listener(self._proxy_app(rt), rt.node.ip, port)
                try:
                    await listener.start()
                except OSError as exc:
                    log.warning("serve proxy could not bind", ip=rt.node.ip, port=port, error=str(exc))
                    continue
                rt.proxy = listener
            elif not want and rt.proxy is not None:
                proxy, rt.proxy = rt.proxy, None
                await proxy.stop()

    async def close(self) -> None:
        for nid in list(self.nodes):
            await self.remove_node(nid)
        if self._task is not None:
            self._task.cancel()

    # -- HTTP: dashboard agent ------------------------------------------------------------------
    def _agent_app(self, rt: _NodeRuntime) -> web.Application:
        async def raylet_health(_: web.Request) -> web.Response:
            if rt.faults.raylet_down:
                return web.Response(status=503, text="Local Raylet failed", content_type=_TEXT)
            return web.Response(text="success", content_type=_TEXT)

        async def unified_health(_: web.Request) -> web.Response:
            if rt.faults.raylet_down:
                return web.Response(status=503, text="raylet: Local Raylet failed", content_type=_TEXT)
            if rt.spec.is_head and rt.faults.gcs_down:
                return web.Response(status=503, text="raylet: success\ngcs: failed", content_type=_TEXT)
            gcs = "success" if rt.spec.is_head else "success (no local gcs)"
            return web.Response(text=f"raylet: success\ngcs: {gcs}", content_type=_TEXT)

        app = web.Application()
        app.router.add_get("/api/local_raylet_healthz", raylet_health)
        app.router.add_get("/api/healthz", unified_health)
        return app

    # -- HTTP: dashboard (head) -------------------------------------------------------------------
    def _dashboard_app(self, rt: _NodeRuntime) -> web.Application:
        def auth_denied(request: web.Request) -> web.Response | None:
            """Ray 2.60's token middleware: ``authorization``, then ``x-ray-authorization``, then
            the dashboard cookie; 401 when none is sent, 403 when it is not ``Bearer <token>``."""
            token = rt.spec.auth_token
            if token is None:
                return None
            header = request.headers.get("authorization", "") or request.headers.get(AUTH_HEADER, "")
            if not header and request.cookies.get(AUTH_COOKIE):
                header = f"Bearer {request.cookies[AUTH_COOKIE]}"
            if not header:
                return web.Response(status=401, text="Unauthorized: Missing authentication token")
            if not token or header != f"Bearer {token}":
                return web.Response(status=403, text="Forbidden: Invalid authentication token")
            return None

        async def gate(request: web.Request) -> web.Response | None:
            await rt.faults.wait_dashboard_answering()  # a hung dashboard: the client's timeout ends this
            if (denied := auth_denied(request)) is not None:
                return denied
            if rt.faults.dashboard_error:
                return web.Response(status=500, text="Internal Server Error")
            return None

        async def gcs_health(_: web.Request) -> web.Response:
            if rt.faults.gcs_down:
                return web.Response(
                    status=503, text="Health check failed: GCS unreachable", content_type=_TEXT
                )
            return web.Response(text="success", content_type=_TEXT)

        async def version(request: web.Request) -> web.Response:
            if (denied := await gate(request)) is not None:
                return denied
            return web.json_response(
                {
                    "version": "4",
                    "ray_version": "2.60.0",
                    "ray_commit": "b7f4259e944bf6959f721b106adc366ddfa0c356",
                    "session_name": f"session_sim_{self.name}",
                }
            )

        async def get_apps(request: web.Request) -> web.Response:
            if (denied := await gate(request)) is not None:
                return denied
            await self.tick()
            return web.Response(
                body=orjson.dumps(serve_details(self.controller)), content_type="application/json"
            )

        async def put_apps(request: web.Request) -> web.Response:
            if (denied := await gate(request)) is not None:
                return denied
            raw = await request.read()
            try:
                doc = json.loads(raw)
            except json.JSONDecodeError:
                return web.Response(status=500, text=traceback.format_exc())
            try:
                config = validate_config(doc)
            except ValidationError as exc:
                return web.Response(status=400, text=str(exc))
            async with self._lock:
                self.controller.apply(config, doc, self.clock.now(), self.clock.utcnow().timestamp())
            await self.tick()
            self._wake.set()
            return web.Response(status=200)

        async def delete_apps(request: web.Request) -> web.Response:
            if (denied := await gate(request)) is not None:
                return denied
            async with self._lock:
                self.controller.shutdown()
            await self.tick()
            return web.Response(status=200)

        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/api/gcs_healthz", gcs_health)
        app.router.add_get("/api/version", version)
        for path in ("/api/serve/applications/", "/api/serve/applications"):
            app.router.add_get(path, get_apps)
            app.router.add_put(path, put_apps)
            app.router.add_delete(path, delete_apps)
        add_job_routes(app, self.jobs, gate)
        return app

    # -- HTTP: Serve proxy ------------------------------------------------------------------------
    def _proxy_app(self, rt: _NodeRuntime) -> web.Application:
        ctrl = self.controller

        def health_problem() -> str | None:
            status = ctrl.proxies.get(rt.node.node_id, ("", 0.0))[0]
            if status == "DRAINING":
                return DRAINING_MESSAGE
            if not ctrl.routes():
                return NO_ROUTES_MESSAGE
            if not rt.spec.is_head and not ctrl.any_running_replica():
                return NO_REPLICAS_MESSAGE
            if rt.faults.proxy_unhealthy:
                return "Proxy is unhealthy."
            return None

        async def handle(request: web.Request) -> web.Response:
            path = request.path
            if path in ("/-/healthz", "/-/routes"):
                problem = health_problem()
                if problem is not None:
                    return web.Response(status=503, text=problem)
                if path == "/-/healthz":
                    return web.Response(text="success")
                return web.json_response(ctrl.routes())
            app = ctrl.match_route(path)
            if app is None:
                hint = f"Ping http://{request.host}/-/routes for available routes."
                return web.Response(status=404, text=f"Path '{path}' not found. {hint}")
            raw_timeout = ctrl.http_options.get("request_timeout_s")
            timeout = None if raw_timeout is None else float(raw_timeout)
            deadline = None if timeout is None else self.clock.now() + timeout
            while True:
                replicas = ctrl.running_ingress_replicas(app)
                if replicas:
                    break
                # No healthy replica: Ray's proxy waits (forever unless request_timeout_s is set).
                self.request_waiting.set()
                if deadline is not None and self.clock.now() >= deadline:
                    return web.Response(status=408, text=f"Request timed out after {timeout:g}s.")
                changed = self._changed
                try:
                    await asyncio.wait_for(changed.wait(), timeout=0.1)
                except TimeoutError:
                    pass
            local = [r for r in replicas if r.node_id == rt.node.node_id]
            pool = local or replicas
            self._rr += 1
            replica = pool[self._rr % len(pool)]
            body = await request.read()
            status, text = respond(app.known, app.entry, request.method, body)
            return web.Response(
                status=status,
                text=text,
                content_type="application/json" if text.startswith(("{", "[")) else "text/plain",
                headers={"x-raysim-replica": replica.replica_id, "x-raysim-node-ip": rt.node.ip},
            )

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        return app
