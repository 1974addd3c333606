"""The cluster simulator's Gateway API implementation: a GatewayClass controller and its data plane.

Only where the Gateway API CRDs are served (checked through discovery at start; without them this
controller does nothing). It behaves as an implementation whose ``controllerName`` is
:data:`CONTROLLER_NAME`:

* **GatewayClass** with that controller name: ``Accepted`` and ``SupportedVersion`` True (it
  implements the v1.4 standard channel's core HTTP routing). Classes of other controllers are left
  alone, as every implementation does.
* **Gateway** of such a class: one address from the simulator's pod network (the same allocator
  the kubelet uses for Pods, so it is reachable the same way) and, per ``HTTP`` listener, an HTTP
  server bound on that address and the listener's port (:class:`~.gateway_proxy.ListenerServer`).
  Status: ``addresses`` (``IPAddress``), ``Accepted`` and ``Programmed`` True once the listeners
  are bound, and per listener ``supportedKinds``, ``attachedRoutes`` and ``Accepted`` /
  ``Programmed`` / ``ResolvedRefs`` True, ``Conflicted`` False. A listener of another protocol, or
  whose port cannot be bound, is not Accepted, and the Gateway is then not Programmed.
* **HTTPRoute** whose ``parentRefs`` name such a Gateway: one ``status.parents`` entry per such
  parent (entries of other controllers are kept) with ``Accepted`` (the listener's
  ``allowedRoutes``: ``Same`` or ``All`` namespaces; a ``sectionName`` must name a listener) and
  ``ResolvedRefs`` (every backend a Service that exists with the referenced port; another
  namespace needs a ReferenceGrant). Accepted routes are programmed on the listener.

Every change of a GatewayClass, Gateway, HTTPRoute, Service or ReferenceGrant re-programs all
Gateways (the simulator holds a handful); statuses are written only when they change, keeping
each condition's ``lastTransitionTime`` while its status stays the same.
"""

from __future__ import annotations

import copy
from typing import Any

import anyio

from kuberay_py.cache import Cache
from kuberay_py.client import Client, Conflict, NotFound, resources
from kuberay_py.clock import Clock, RealClock, format_rfc3339
from kuberay_py.envtest.sim.addresses import AddressAllocator
from kuberay_py.envtest.sim.dirtyset import DirtySet
from kuberay_py.envtest.sim.gateway_proxy import ListenerServer, RouteTable, log

__all__ = ["CONTROLLER_NAME", "GatewayController"]

CONTROLLER_NAME = "kuberay-py.ray.io/sim-gateway"
GROUP = "gateway.networking.k8s.io"
REFERENCEGRANTS = resources.Resource(GROUP, "v1beta1", "ReferenceGrant", "referencegrants")
_KINDS = [{"group": GROUP, "kind": "HTTPRoute"}]
_ALL = "all"


class _Handler:
    def __init__(self, mark: Any) -> None:
        self._mark = mark

    def on_add(self, obj: dict[str, Any], is_initial: bool) -> None:
        self._mark()

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self._mark()

    def on_delete(self, obj: dict[str, Any]) -> None:
        self._mark()


class _Programmed:
    """One Gateway's data plane: its address and a server per bound listener."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.servers: dict[str, ListenerServer] = {}  # listener name -> server
        self.errors: dict[str, str] = {}  # listener name -> why it could not be bound


class GatewayController:
    def __init__(
        self, client: Client, cache: Cache, addresses: AddressAllocator, *, clock: Clock | None = None
    ) -> None:
        self.client = client
        self.cache = cache
        self.addresses = addresses
        self.clock = clock or RealClock()
        self.served = False
        self._grants = False
        self._queue: DirtySet[str] = DirtySet(log, "gateway sync", lambda _k: {})
        self._gateways: dict[str, _Programmed] = {}  # Gateway uid -> its data plane

    async def register(self) -> bool:
        """Watch the Gateway API kinds when they are served; False (and nothing watched) otherwise."""
        kinds = [resources.GATEWAYCLASSES, resources.GATEWAYS, resources.HTTPROUTES]
        if not all([await self.client.served(res) for res in kinds]):
            log.info("Gateway API not installed; the simulator's Gateway stays off")
            return False
        self._grants = await self.client.served(REFERENCEGRANTS)
        self.served = True
        handler = _Handler(lambda: self._queue.mark(_ALL))
        for res in [*kinds, resources.SERVICES] + ([REFERENCEGRANTS] if self._grants else []):
            self.cache.informer_for(res).add_event_handler(handler)
        return True

    async def run(self) -> None:
        if not self.served:
            return
        await self.cache.wait_for_cache_sync()
        try:
            await self._queue.run(lambda _key: self.reconcile())
        finally:
            # anyio cancellation is level-triggered: shield the clean-up or its awaits are
            # cancelled too, leaving listeners bound and their upstream sessions open
            with anyio.CancelScope(shield=True):
                for programmed in self._gateways.values():
                    for server in programmed.servers.values():
                        await server.stop()
                    self.addresses.free(programmed.address)
                self._gateways.clear()

    # -- one round ---------------------------------------------------------------------------------
    async def reconcile(self) -> None:
        classes = {
            gc["metadata"]["name"]: gc
            for gc in self.cache.list(resources.GATEWAYCLASSES)
            if (gc.get("spec") or {}).get("controllerName") == CONTROLLER_NAME
        }
        for gc in classes.values():
            await self._write_status(resources.GATEWAYCLASSES, gc, self._class_status(gc))
        gateways = [
            gw
            for gw in self.cache.list(resources.GATEWAYS)
            if (gw.get("spec") or {}).get("gatewayClassName") in classes
            and not gw["metadata"].get("deletionTimestamp")
        ]
        await self._program_listeners(gateways)
        routes = self.cache.list(resources.HTTPROUTES)
        attached: dict[tuple[str, str], list[dict[str, Any]]] = {}  # (gateway uid, listener) -> routes
        route_statuses: list[tuple[dict[str, Any], dict[str, Any]]] = []
        for route in routes:
            parents = self._route_parents(route, gateways, attached)
            if parents is not None:
                status = dict(route.get("status") or {})
                others = [
                    p for p in status.get("parents") or [] if p.get("controllerName") != CONTROLLER_NAME
                ]
                status["parents"] = others + parents
                route_statuses.append((route, status))
        # The data plane first, the statuses after: a route whose status shows its generation must
        # already be routed that way (a client that waits for the status then sends traffic).
        for gw in gateways:
            programmed = self._gateways[gw["metadata"]["uid"]]
            for name, server in programmed.servers.items():
                server.table = RouteTable.build(attached.get((gw["metadata"]["uid"], name), []), server.table)
        for route, status in route_statuses:
            await self._write_status(resources.HTTPROUTES, route, status)
        for gw in gateways:
            programmed = self._gateways[gw["metadata"]["uid"]]
            await self._write_status(resources.GATEWAYS, gw, self._gateway_status(gw, programmed, attached))

    async def _program_listeners(self, gateways: list[dict[str, Any]]) -> None:
        wanted = {gw["metadata"]["uid"]: gw for gw in gateways}
        for uid in [u for u in self._gateways if u not in wanted]:
            gone = self._gateways.pop(uid)
            for server in gone.servers.values():
                await server.stop()
            self.addresses.free(gone.address)
        for uid, gw in wanted.items():
            programmed = self._gateways.get(uid)
            if programmed is None:
                programmed = self._gateways[uid] = _Programmed(self.addresses.allocate())
            listeners = {str(lst.get("name")): lst for lst in (gw.get("spec") or {}).get("listeners") or []}
            for name in [n for n in programmed.servers if n not in listeners]:
                await programmed.servers.pop(name).stop()
            programmed.errors = {}
            for name, lst in listeners.items():
                bound = programmed.servers.get(name)
                if bound is not None and bound.port == int(lst.get("port") or 0):
                    continue
                if bound is not None:
                    await programmed.servers.pop(name).stop()
                if lst.get("protocol") != "HTTP":
                    programmed.errors[name] = (
                        f"UnsupportedProtocol:protocol {lst.get('protocol')} is not supported"
                    )
                    continue
                server = ListenerServer(self.cache, programmed.address, int(lst.get("port") or 0))
                try:
                    await server.start()
                except OSError as exc:
                    programmed.errors[name] = f"PortUnavailable:{exc}"
                    continue
                programmed.servers[name] = server
                log.info(
                    "gateway listener bound",
                    gateway=gw["metadata"]["name"],
                    address=server.address,
                    port=server.port,
                )

    # -- statuses ----------------------------------------------------------------------------------
    def _conditions(
        self,
        obj: dict[str, Any],
        previous: list[dict[str, Any]] | None,
        wanted: list[tuple[str, bool, str, str]],
    ) -> list[dict[str, Any]]:
        """Conditions with observedGeneration; a condition whose status holds keeps its transition time."""
        old = {c.get("type"): c for c in previous or []}
        now = format_rfc3339(self.clock.utcnow())
        generation = int(obj["metadata"].get("generation") or 0)
        out = []
        for kind, ok, reason, message in wanted:
            status = "True" if ok else "False"
            prior = old.get(kind)
            since = prior["lastTransitionTime"] if prior and prior.get("status") == status else now
            out.append(
                {
                    "type": kind,
                    "status": status,
                    "reason": reason,
                    "message": message,
                    "observedGeneration": generation,
                    "lastTransitionTime": since,
                }
            )
        return out

    def _class_status(self, gc: dict[str, Any]) -> dict[str, Any]:
        status = dict(gc.get("status") or {})
        status["conditions"] = self._conditions(
            gc,
            status.get("conditions"),
            [
                ("Accepted", True, "Accepted", "Accepted by the kuberay-py simulator"),
                ("SupportedVersion", True, "SupportedVersion", "Gateway API v1.4 standard channel"),
            ],
        )
        return status

    def _gateway_status(
        self,
        gw: dict[str, Any],
        programmed: _Programmed,
        attached: dict[tuple[str, str], list[dict[str, Any]]],
    ) -> dict[str, Any]:
        old = gw.get("status") or {}
        old_listeners = {str(x.get("name")): x for x in old.get("listeners") or []}
        listeners = []
        for lst in (gw.get("spec") or {}).get("listeners") or []:
            name = str(lst.get("name"))
            error = programmed.errors.get(name)
            reason, _, message = (error or "").partition(":")
            ok = error is None
            conditions = [
                ("Accepted", ok, "Accepted" if ok else reason, "Listener accepted" if ok else message),
                (
                    "Programmed",
                    ok,
                    "Programmed" if ok else "Invalid",
                    "Listener programmed" if ok else message,
                ),
                ("ResolvedRefs", True, "ResolvedRefs", "Refs resolved"),
                ("Conflicted", False, "NoConflicts", "No conflicts"),
            ]
            listeners.append(
                {
                    "name": name,
                    "supportedKinds": copy.deepcopy(_KINDS),
                    "attachedRoutes": len(attached.get((gw["metadata"]["uid"], name), [])),
                    "conditions": self._conditions(
                        gw, (old_listeners.get(name) or {}).get("conditions"), conditions
                    ),
                }
            )
        ready = not programmed.errors
        conditions = [
            ("Accepted", True, "Accepted" if ready else "ListenersNotValid", "Gateway accepted"),
            (
                "Programmed",
                ready,
                "Programmed" if ready else "Invalid",
                f"Listening on {programmed.address}" if ready else "Some listeners could not be programmed",
            ),
        ]
        status = dict(old)
        status["addresses"] = [{"type": "IPAddress", "value": programmed.address}]
        status["conditions"] = self._conditions(gw, old.get("conditions"), conditions)
        status["listeners"] = listeners
        return status

    def _route_parents(
        self,
        route: dict[str, Any],
        gateways: list[dict[str, Any]],
        attached: dict[tuple[str, str], list[dict[str, Any]]],
    ) -> list[dict[str, Any]] | None:
        """Our ``status.parents`` entries for ``route`` (None: it names none of our Gateways)."""
        meta = route["metadata"]
        by_key = {(g["metadata"]["namespace"], g["metadata"]["name"]): g for g in gateways}
        old = {
            (p.get("parentRef") or {}).get("name"): p
            for p in (route.get("status") or {}).get("parents") or []
            if p.get("controllerName") == CONTROLLER_NAME
        }
        entries: list[dict[str, Any]] = []
        refs_ok, refs_reason, refs_message = self._resolve_backends(route)
        supported, unsupported = self._supported(route)
        for ref in (route.get("spec") or {}).get("parentRefs") or []:
            if ref.get("group", GROUP) != GROUP or ref.get("kind", "Gateway") != "Gateway":
                continue
            gw = by_key.get((ref.get("namespace") or meta["namespace"], ref.get("name")))
            if gw is None:
                continue
            listeners = self._allowing_listeners(gw, ref, meta["namespace"])
            accepted = bool(listeners) and supported
            if not listeners:
                reason, message = "NotAllowedByListeners", "No listener of the Gateway allows this route"
            elif not supported:
                reason, message = "UnsupportedValue", unsupported
            else:
                reason, message = "Accepted", "Route accepted"
            if accepted:
                for name in listeners:
                    attached.setdefault((gw["metadata"]["uid"], name), []).append(route)
            prior = old.get(ref.get("name")) or {}
            entries.append(
                {
                    "parentRef": copy.deepcopy(ref),
                    "controllerName": CONTROLLER_NAME,
                    "conditions": self._conditions(
                        route,
                        prior.get("conditions"),
                        [
                            ("Accepted", accepted, reason, message),
                            ("ResolvedRefs", refs_ok, refs_reason, refs_message),
                        ],
                    ),
                }
            )
        return entries or None

    def _allowing_listeners(self, gw: dict[str, Any], ref: dict[str, Any], route_ns: str) -> list[str]:
        programmed = self._gateways[gw["metadata"]["uid"]]
        out = []
        for lst in (gw.get("spec") or {}).get("listeners") or []:
            name = str(lst.get("name"))
            if name not in programmed.servers:
                continue
            if ref.get("sectionName") and ref["sectionName"] != name:
                continue
            if ref.get("port") and int(ref["port"]) != int(lst.get("port") or 0):
                continue
            where = ((lst.get("allowedRoutes") or {}).get("namespaces") or {}).get("from", "Same")
            if where == "All" or (where == "Same" and route_ns == gw["metadata"]["namespace"]):
                out.append(name)
        return out

    @staticmethod
    def _supported(route: dict[str, Any]) -> tuple[bool, str]:
        for rule in (route.get("spec") or {}).get("rules") or []:
            if rule.get("filters") or rule.get("timeouts") or rule.get("sessionPersistence"):
                return False, "filters, timeouts and session persistence are not implemented by the simulator"
            for match in rule.get("matches") or []:
                if match.get("queryParams"):
                    return False, "query parameter matches are not implemented by the simulator"
        return True, ""

    def _resolve_backends(self, route: dict[str, Any]) -> tuple[bool, str, str]:
        namespace = route["metadata"]["namespace"]
        for rule in (route.get("spec") or {}).get("rules") or []:
            for backend in rule.get("backendRefs") or []:
                name = backend.get("name")
                if backend.get("group") not in (None, "") or backend.get("kind") not in (None, "Service"):
                    return False, "InvalidKind", f"backend {name}: only core Services are supported"
                target_ns = backend.get("namespace") or namespace
                if target_ns != namespace and not self._granted(namespace, target_ns, str(name)):
                    return False, "RefNotPermitted", f"backend {target_ns}/{name} needs a ReferenceGrant"
                service = self.cache.get(resources.SERVICES, str(name), target_ns)
                if service is None:
                    return False, "BackendNotFound", f"Service {target_ns}/{name} not found"
                ports = [p.get("port") for p in (service.get("spec") or {}).get("ports") or []]
                if backend.get("port") not in ports:
                    return (
                        False,
                        "BackendNotFound",
                        f"Service {target_ns}/{name} has no port {backend.get('port')}",
                    )
        return True, "ResolvedRefs", "All references resolved"

    def _granted(self, from_ns: str, to_ns: str, name: str) -> bool:
        if not self._grants:
            return False
        for grant in self.cache.list(REFERENCEGRANTS, to_ns):
            spec = grant.get("spec") or {}
            source = any(
                f.get("group") == GROUP and f.get("kind") == "HTTPRoute" and f.get("namespace") == from_ns
                for f in spec.get("from") or []
            )
            target = any(
                t.get("group", "") == "" and t.get("kind") == "Service" and t.get("name") in (None, "", name)
                for t in spec.get("to") or []
            )
            if source and target:
                return True
        return False

    async def _write_status(
        self, res: resources.Resource, obj: dict[str, Any], status: dict[str, Any]
    ) -> None:
        if obj.get("status") == status:
            return
        body = copy.deepcopy(obj)
        body["status"] = status
        try:
            await self.client.update_status(res, body)
        except NotFound:
            return
        except Conflict:
            self._queue.mark(_ALL)  # a newer version is on its way through the watch
