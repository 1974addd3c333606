"""``BuiltinAPIServer``: the in-process Kubernetes API server tests and the demo run against.

Serves HTTP on 127.0.0.1, or HTTPS when given an ``ssl_context`` (``Environment(tls=True)``
makes a throw-away CA and serving certificate with the ``openssl`` command). Besides the API it
exposes the knobs tests use to make the server misbehave -- expire or cut watches, compact
history, inject errors -- and a log of every request, so a test or benchmark can count exactly
what a controller asked for.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Sequence
from typing import Any

from aiohttp import web

from ...clock import Clock
from .access import AccessControl, Denial
from .bootstrap import bootstrap_cluster_role_bindings, bootstrap_cluster_roles
from .builtin_types import BUILTIN_TYPES
from .core import ApiCore
from .crds import CRD_KEY, CrdHooks
from .endpointvalidation import EndpointsHooks
from .eventconversion import CORE_EVENTS, EVENTS_V1, core_to_events_v1, events_v1_to_core
from .events import EventHooks
from .faults import Fault, FaultInjector, RequestLog
from .http_api import MAX_BODY, ApiHandler, HandlerSettings
from .jobs import JobHooks
from .kinds import NamespaceHooks, PodHooks, SecretHooks, ServiceHooks
from .rbackinds import RbacHooks
from .reviews import REVIEW_TYPES, virtual_creates
from .scheduling import SchedulingHooks, optional_types
from .tokenrequest import token_request_handler
from .webhookconfig import (
    VALIDATING_WEBHOOK_CONFIGURATIONS,
    WEBHOOK_CONFIG_KEY,
    ValidatingWebhookConfigurationHooks,
)

__all__ = ["BuiltinAPIServer"]

_INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class BuiltinAPIServer:
    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Clock | None = None,
        history_size: int = 10_000,
        bookmark_interval: float = 1.0,
        watch_timeout: float = 1800.0,
        namespace_controller: bool = True,
        service_cidr: str = "10.0.0.0/16",
        ssl_context: ssl.SSLContext | None = None,
        accept_loopback_endpoint_addresses: bool = False,
        rbac: bool = False,
        apiserver_args: Sequence[str] = (),
    ) -> None:
        """``apiserver_args``: the kube-apiserver flags that switch on off-by-default groups
        (``--runtime-config`` with its ``--feature-gates``, see :mod:`.scheduling`)."""
        self.host = host
        self.ssl_context = ssl_context
        self.port = port
        self.core = ApiCore(clock=clock, history_size=history_size)
        self.faults = FaultInjector()
        self.request_log = RequestLog()
        self._runner: web.AppRunner | None = None
        reg = self.core.registry
        reg.add_all(BUILTIN_TYPES)
        reg.add_all(REVIEW_TYPES)
        reg.add(VALIDATING_WEBHOOK_CONFIGURATIONS)
        scheduling_hooks = SchedulingHooks()
        for rt in optional_types(apiserver_args):
            reg.add(rt)
            self.core.hooks[rt.key] = scheduling_hooks
        # Authentication and authorization; RBAC is enforced only with rbac=True.
        self.access = AccessControl(self.core, rbac=rbac)
        self.access.virtual.update(virtual_creates(self.access))
        self.access.virtual[("", "serviceaccounts", "token")] = token_request_handler(self.access)
        rbac_hooks = RbacHooks(self.access)
        for plural in ("roles", "clusterroles", "rolebindings", "clusterrolebindings"):
            self.core.hooks[("rbac.authorization.k8s.io", plural)] = rbac_hooks
        self.core.hooks[("", "pods")] = PodHooks()
        self.core.hooks[("", "services")] = ServiceHooks(service_cidr)
        self.core.hooks[("", "namespaces")] = NamespaceHooks(namespace_controller)
        self.core.hooks[("", "secrets")] = SecretHooks()
        self.core.hooks[("", "events")] = EventHooks()  # both Event APIs: they share storage
        self.core.conversions[(CORE_EVENTS, EVENTS_V1)] = core_to_events_v1
        self.core.conversions[(EVENTS_V1, CORE_EVENTS)] = events_v1_to_core
        self.core.hooks[CRD_KEY] = CrdHooks()
        self.core.hooks[("batch", "jobs")] = JobHooks()
        self.core.hooks[WEBHOOK_CONFIG_KEY] = ValidatingWebhookConfigurationHooks()
        self._endpoints = EndpointsHooks(accept_loopback=accept_loopback_endpoint_addresses)
        self.core.hooks[("discovery.k8s.io", "endpointslices")] = self._endpoints
        self.core.hooks[("", "endpoints")] = self._endpoints
        ns_rt = reg.get("", "v1", "namespaces")
        assert ns_rt is not None
        for name in _INITIAL_NAMESPACES:
            self.core.create(ns_rt, None, {"metadata": {"name": name}})
        if rbac:  # kube-apiserver's RBAC post-start hook: the default roles and bindings
            for plural, docs in (
                ("clusterroles", bootstrap_cluster_roles()),
                ("clusterrolebindings", bootstrap_cluster_role_bindings()),
            ):
                rbac_rt = reg.get("rbac.authorization.k8s.io", "v1", plural)
                assert rbac_rt is not None
                for doc in docs:
                    self.core.create(rbac_rt, None, doc)
        self.settings = HandlerSettings(
            self.core,
            self.faults,
            self.request_log,
            bookmark_interval=bookmark_interval,
            watch_timeout=watch_timeout,
            access=self.access,
        )
        self._handler = ApiHandler(self.settings)
        self._handler.service_proxy.allow_loopback = accept_loopback_endpoint_addresses

    @property
    def bookmark_interval(self) -> float:
        """Seconds between BOOKMARK events on watches that allow them (changeable while serving)."""
        return self.settings.bookmark_interval

    @bookmark_interval.setter
    def bookmark_interval(self, value: float) -> None:
        self.settings.bookmark_interval = value

    @property
    def watch_timeout(self) -> float:
        """The default watch lifetime when a client gives no ``timeoutSeconds``."""
        return self.settings.watch_timeout

    @watch_timeout.setter
    def watch_timeout(self, value: float) -> None:
        self.settings.watch_timeout = value

    @property
    def accept_loopback_endpoint_addresses(self) -> bool:
        """Off by default, as kube-apiserver: loopback endpoint addresses get 422 Invalid.

        The one departure from kube-apiserver this server has on purpose, for a simulator (or a
        test) whose Pods could only get loopback addresses because this host gave it no pod
        network; it is turned on explicitly by that caller, never implied.
        """
        return self._endpoints.accept_loopback

    @accept_loopback_endpoint_addresses.setter
    def accept_loopback_endpoint_addresses(self, value: bool) -> None:
        self._endpoints.accept_loopback = value
        self._handler.service_proxy.allow_loopback = value  # pods/proxy to such Pods, likewise

    # -- lifecycle ----------------------------------------------------------------------------------

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        scheme = "https" if self.ssl_context is not None else "http"
        return f"{scheme}://{self.host}:{self.port}"

    async def start(self) -> None:
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_route("*", "/{tail:.*}", self._handler.handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(
            self._runner, self.host, self.port, reuse_address=True, ssl_context=self.ssl_context
        )
        await site.start()
        server = site._server
        assert server is not None
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1]
        self.settings.address = self.address

    async def stop(self) -> None:
        for w in self.core.storage.all_watchers():
            w.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self._handler.close()

    async def __aenter__(self) -> BuiltinAPIServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- fault knobs --------------------------------------------------------------------------------

    def force_expire_watches(self) -> int:
        """Compact history and end every open watch with a 410 ``Expired`` ERROR event.

        Clients must relist: resuming from their last resourceVersion gets 410 as well.
        """
        self.core.storage.compact()
        watchers = self.core.storage.all_watchers()
        for w in watchers:
            w.expire(f"too old resource version: {self.core.storage.rv}")
        return len(watchers)

    def cut_watches(self) -> int:
        """Drop every open watch connection without a clean end (a network failure)."""
        watchers = self.core.storage.all_watchers()
        for w in watchers:
            w.cut_off()
        return len(watchers)

    def end_watches(self) -> int:
        """End every open watch cleanly, as a server-side timeout does; clients resume from their RV."""
        watchers = self.core.storage.all_watchers()
        for w in watchers:
            w.close()
        return len(watchers)

    def compact(self) -> None:
        """Forget the event history: watches and continue tokens from older versions get 410."""
        self.core.storage.compact()

    def inject(
        self,
        method: str,
        path_regex: str,
        status: int,
        count: int = 1,
        *,
        reason: str | None = None,
        message: str | None = None,
        retry_after: int | None = None,
        delay: float = 0.0,
    ) -> Fault:
        """Answer the next ``count`` matching requests with an error ``Status`` (``count=-1``: forever).

        ``method`` is an HTTP method (``"PUT"``) or a verb (``"list"``, ``"watch"``); ``status=0``
        with ``delay`` only slows the requests down.
        """
        return self.faults.add(
            method,
            path_regex,
            status,
            count,
            reason=reason,
            message=message,
            retry_after=retry_after,
            delay=delay,
        )

    def clear_faults(self) -> None:
        self.faults.clear()

    def open_watches(self) -> int:
        return len(self.core.storage.all_watchers())

    @property
    def resource_version(self) -> int:
        return self.core.storage.rv

    @property
    def rbac(self) -> bool:
        """Whether RBAC is enforced (``rbac=True``); without it every request acts as the admin."""
        return self.access.rbac

    @property
    def denials(self) -> list[Denial]:
        """Every request refused with 403 so far (for "this controller was never forbidden" tests)."""
        return self.access.denials

    def counts_by_verb(self, resource: str | None = None) -> dict[str, int]:
        return dict(self.request_log.counts_by_verb(resource))

    async def wait_idle(self) -> None:
        """Let callbacks scheduled by the last request (CRD establishment, namespace cleanup) run."""
        for _ in range(3):
            await asyncio.sleep(0)

    def objects(self, group: str, plural: str) -> list[dict[str, Any]]:
        """All stored objects of one resource (for assertions; do not mutate)."""
        bucket = self.core.storage.buckets.get((group, plural))
        return [] if bucket is None else [bucket.objects[k] for k in bucket.sorted_keys()]
