"""``Environment``: a Kubernetes API for tests -- real binaries when present, built-in otherwise.

Mirrors controller-runtime's ``envtest.Environment``: ``KUBEBUILDER_ASSETS`` (or
``TEST_ASSET_ETCD``/``TEST_ASSET_KUBE_APISERVER``) selects real etcd + kube-apiserver,
``USE_EXISTING_CLUSTER=true`` (or ``use_existing=True``) uses the current kubeconfig, and otherwise
the in-process :class:`BuiltinAPIServer` serves. CRDs are installed and waited for until
Established and served, then a kubeconfig file and a :class:`~kuberay_py.client.ClientConfig` are
handed out. With ``simulate=True`` the cluster simulator (kubelet, EndpointSlices, GC) runs alongside.
With ``webhook_install_options`` the admission webhook configurations are installed pointing at a
local webhook server (:mod:`kuberay_py.envtest.webhooks`). With ``rbac=True`` the built-in server
enforces RBAC as a real kube-apiserver always does, and ``service_account_config`` hands out
credentials of a ServiceAccount (a TokenRequest token), so a controller can run under the RBAC it
will get in a cluster.

``kubeconfig_out`` is written only once the whole environment is ready (CRDs Established *and*
served, the simulator synced), atomically (temp file + rename): a client that waits for the file
and then creates a custom resource at once must not get a 404 from a group that is not served yet.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import structlog
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import ApiClient, Configuration

from .apiserver import BuiltinAPIServer
from .audit import MARKER_PARAM, AuditRequestLog
from .controlplane import Assets, ControlPlane, find_assets, make_certs
from .crdfiles import read_crds
from .kubeconfig import kubeconfig_dict, write_kubeconfig
from .requestlog import BuiltinRequestLog, ServerRequestLog
from .rest import RestError, create_or_replace, request_json
from .reuse import acquire_control_plane, release_control_plane
from .serviceaccount import request_token, write_service_account_kubeconfig
from .webhooks import WebhookInstallOptions, install_webhooks, uninstall_webhooks

if TYPE_CHECKING:
    from kuberay_py.client import Client, ClientConfig
    from kuberay_py.envtest.sim.podnetwork import PodNetwork

__all__ = ["Environment", "uses_real_apiserver"]

log = structlog.get_logger("kuberay_py.envtest")

_CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _truthy(v: str | None) -> bool:
    return (v or "").lower() in ("1", "true", "yes")


def uses_real_apiserver(use_existing: bool = False) -> bool:
    """Whether an Environment built now would talk to a real kube-apiserver (binaries or a cluster)."""
    return use_existing or _truthy(os.environ.get("USE_EXISTING_CLUSTER")) or find_assets() is not None


class Environment:
    def __init__(
        self,
        crd_paths: Sequence[str] = (),
        *,
        simulate: bool = False,
        pod_runtime: Any = None,
        probe_period_scale: float = 1.0,
        use_existing: bool = False,
        error_if_crd_path_missing: bool = True,
        crd_install_timeout: float = 30.0,
        apiserver_args: Sequence[str] = (),
        server_options: dict[str, Any] | None = None,
        kubeconfig_out: str | None = None,
        assets: Assets | None = None,
        tls: bool = False,
        pod_cidr: str | None = None,
        rbac: bool = False,
        webhook_install_options: WebhookInstallOptions | None = None,
    ) -> None:
        self.crd_paths = list(crd_paths)
        self.simulate = simulate
        self.pod_runtime = pod_runtime
        self.probe_period_scale = probe_period_scale
        self.use_existing = use_existing or _truthy(os.environ.get("USE_EXISTING_CLUSTER"))
        self.error_if_crd_path_missing = error_if_crd_path_missing
        self.crd_install_timeout = crd_install_timeout
        self.apiserver_args = list(apiserver_args)
        self.server_options = dict(server_options or {})
        self._kubeconfig_out = kubeconfig_out
        self._assets = assets
        self.tls = tls
        self.pod_cidr = pod_cidr
        # The built-in server enforces RBAC only when asked; a real kube-apiserver always does
        # (--authorization-mode=RBAC), and the environment's admin is in system:masters there.
        self.rbac = rbac
        self.webhook_install_options = webhook_install_options
        self._pod_networks: list[PodNetwork] = []
        self.server: BuiltinAPIServer | None = None
        self.control_plane: ControlPlane | None = None
        self.kubeconfig_path = ""
        self.url = ""
        self._client_config: ClientConfig | None = None
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None
        self._api: ApiClient | None = None
        self._sim_task: asyncio.Task[None] | None = None
        self._sim_client: Client | None = None
        self.simulator: Any = None
        self._audit: AuditRequestLog | None = None

    @property
    def real(self) -> bool:
        """True when talking to a real kube-apiserver (binaries or an existing cluster)."""
        return self.server is None

    @property
    def request_log(self) -> ServerRequestLog:
        """The requests this Environment's API server received since it started (or the last
        ``clear()``): the built-in server's own log, or kube-apiserver's audit log in real mode."""
        if self.server is not None:
            return BuiltinRequestLog(self.server.request_log)
        if self._audit is None:
            raise RuntimeError(
                "no request log: the Environment is not started, uses an existing cluster, or "
                "apiserver_args moved kube-apiserver's audit log"
            )
        return self._audit

    @property
    def client_config(self) -> ClientConfig:
        if self._client_config is None:
            raise RuntimeError("Environment is not started")
        return self._client_config

    # -- lifecycle ----------------------------------------------------------------------------------

    async def __aenter__(self) -> Environment:
        await self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        self._tmpdir = tempfile.TemporaryDirectory(prefix="kuberay-envtest-")
        try:
            crds = self._crd_docs(self.crd_paths)
            await self._start_apiserver([d["metadata"]["name"] for d in crds])
            await self._load_clients()
            await self._start_audit()
            if crds:
                await self.install_crds(crds)
            if self.webhook_install_options is not None:
                assert self._api is not None and self._tmpdir is not None
                await install_webhooks(
                    self._api, self.webhook_install_options, self._tmpdir.name, self.crd_install_timeout
                )
            if self.simulate:
                await self._start_simulator()
            self._publish_kubeconfig()
        except BaseException:
            await self.stop()
            raise

    def _publish_kubeconfig(self) -> None:
        """Copy the kubeconfig to ``kubeconfig_out`` in one rename, now that everything is served."""
        if not self._kubeconfig_out or self.use_existing:
            return
        data = Path(self.kubeconfig_path).read_bytes()
        target = Path(self._kubeconfig_out)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, 0o600)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self.kubeconfig_path = str(target)

    async def _start_apiserver(self, crds: list[str]) -> None:
        assert self._tmpdir is not None
        out = os.path.join(self._tmpdir.name, "kubeconfig")
        if self.use_existing:
            self.kubeconfig_path = os.environ.get("KUBECONFIG", str(Path.home() / ".kube" / "config"))
            log.info("envtest.existing_cluster", kubeconfig=self.kubeconfig_path)
            return
        assets = self._assets or find_assets()
        if assets is not None:
            self.control_plane = await acquire_control_plane(assets, self.apiserver_args, crds)
            certs = self.control_plane.certs
            assert certs is not None
            self.url = self.control_plane.url
            self.kubeconfig_path = write_kubeconfig(
                out,
                kubeconfig_dict(
                    self.url, ca_file=certs.ca_cert, cert_file=certs.client_cert, key_file=certs.client_key
                ),
            )
            log.info("envtest.real_apiserver", url=self.url)
            return
        options = dict(self.server_options)
        if self.rbac:
            options.setdefault("rbac", True)
        if self.apiserver_args:  # the off-by-default groups it switches on, as kube-apiserver's
            options.setdefault("apiserver_args", self.apiserver_args)
        ca_file = None
        if self.tls:
            certs = await asyncio.to_thread(make_certs, os.path.join(self._tmpdir.name, "certs"))
            ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ctx.load_cert_chain(certs.serving_cert, certs.serving_key)
            options["ssl_context"] = ctx
            ca_file = certs.ca_cert
        self.server = BuiltinAPIServer(**options)
        await self.server.start()
        self.url = self.server.url
        self.kubeconfig_path = write_kubeconfig(
            out, kubeconfig_dict(self.url, token="envtest-admin", ca_file=ca_file)
        )
        log.info("envtest.builtin_apiserver", url=self.url)

    async def _start_audit(self) -> None:
        """Real mode: the request log starts now, so requests of an earlier user of a reused
        control plane are not in it."""
        if self.control_plane is None or not self.control_plane.audit_log_path:
            return
        api = self._api
        assert api is not None

        async def ping(marker: str) -> None:
            await request_json(api, "GET", "/version", query={MARKER_PARAM: marker})

        self._audit = AuditRequestLog(self.control_plane.audit_log_path, ping)
        await self._audit.start()

    async def _load_clients(self) -> None:
        from kuberay_py.client import load_config

        self._client_config = await load_config(self.kubeconfig_path)
        self._api = ApiClient(await self.kube_configuration())

    async def kube_configuration(self) -> Configuration:
        """A kubernetes_asyncio ``Configuration`` for this environment (for code using its APIs)."""
        cfg = Configuration()
        await k8s_config.load_kube_config(config_file=self.kubeconfig_path, client_configuration=cfg)
        return cfg

    async def api_client(self) -> ApiClient:
        """A new kubernetes_asyncio ``ApiClient``; the caller closes it."""
        return ApiClient(await self.kube_configuration())

    def new_client(self) -> Client:
        from kuberay_py.client import Client

        return Client(self.client_config)

    def claim_pod_network(self) -> PodNetwork:
        """A block of Pod addresses this host routes locally, released when the environment stops.

        For the simulator, and for tests that play kubelet and publish EndpointSlices by hand.
        Without a pod network (no ``CAP_NET_ADMIN``) the block is loopback and the built-in server
        is told to accept loopback endpoint addresses; a real kube-apiserver never does, so in
        real mode this raises :class:`PodNetworkUnavailable` instead.
        """
        from kuberay_py.envtest.sim.podnetwork import DEFAULT_POD_CIDR, claim_pod_network

        network = claim_pod_network(self.pod_cidr or DEFAULT_POD_CIDR, require=self.real)
        self._pod_networks.append(network)
        if network.loopback and self.server is not None:
            self.server.accept_loopback_endpoint_addresses = True
        return network

    async def _start_simulator(self) -> None:
        from kuberay_py.envtest.sim.simulator import Simulator

        network = await asyncio.to_thread(self.claim_pod_network)
        self._sim_client = self.new_client()
        self.simulator = Simulator(
            self._sim_client,
            pod_runtime=self.pod_runtime,
            probe_period_scale=self.probe_period_scale,
            network=network,
        )
        self._sim_task = asyncio.create_task(self.simulator.run(), name="envtest-simulator")
        ready = asyncio.create_task(self.simulator.wait_ready())
        done, _ = await asyncio.wait({ready, self._sim_task}, return_when=asyncio.FIRST_COMPLETED)
        if self._sim_task in done:
            ready.cancel()
            self._sim_task.result()
            raise RuntimeError("the cluster simulator stopped during start-up")

    async def stop(self) -> None:
        if self._sim_task is not None:
            self._sim_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._sim_task
            self._sim_task = None
        if self._sim_client is not None:
            await self._sim_client.close()
            self._sim_client = None
        if self._api is not None and self.use_existing and self.webhook_install_options is not None:
            await uninstall_webhooks(self._api, self.webhook_install_options)
        if self._api is not None:
            await self._api.close()
            self._api = None
        if self._audit is not None:
            self._audit.close()
            self._audit = None
        if self.server is not None:
            await self.server.stop()
        if self.control_plane is not None:
            await release_control_plane(self.control_plane)
        # Last: whatever still talks to a Pod address has stopped, so no packet for it can take
        # the default route once the local route is gone.
        while self._pod_networks:
            self._pod_networks.pop().release()
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None

    # -- CRDs -------------------------------------------------------------------------------------

    async def install_crds(
        self, paths_or_docs: Iterable[str | Path | dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Create (or update) CRDs from files/directories or dicts and wait until they are served."""
        docs = self._crd_docs(paths_or_docs)
        installed = []
        deadline = asyncio.get_running_loop().time() + self.crd_install_timeout
        assert self._api is not None
        for doc in docs:
            installed.append(await create_or_replace(self._api, _CRD_PATH, doc, deadline))
        await self.wait_for_crds([d["metadata"]["name"] for d in docs])
        return installed

    def _crd_docs(self, paths_or_docs: Iterable[str | Path | dict[str, Any]]) -> list[dict[str, Any]]:
        items = list(paths_or_docs)
        docs = [d for d in items if isinstance(d, dict)]
        docs += read_crds(
            [p for p in items if not isinstance(p, dict)], error_if_missing=self.error_if_crd_path_missing
        )
        return docs

    async def wait_for_crds(self, names: Iterable[str], poll: float = 0.05) -> None:
        """Until every CRD is Established and its resources appear in discovery (envtest's WaitForCRDs)."""
        assert self._api is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.crd_install_timeout
        pending = list(names)
        while pending:
            name = pending[0]
            try:
                crd = await request_json(self._api, "GET", f"{_CRD_PATH}/{name}")
            except RestError as e:
                if not (e.retriable or e.status == 404) or loop.time() > deadline:
                    raise
                await asyncio.sleep(poll)
                continue
            established = any(
                c.get("type") == "Established" and c.get("status") == "True"
                for c in (crd.get("status") or {}).get("conditions") or []
            )
            if established and await self._served(crd):
                pending.pop(0)
                continue
            if loop.time() > deadline:
                raise TimeoutError(f"CRD {name} not established within {self.crd_install_timeout}s")
            await asyncio.sleep(poll)

    async def _served(self, crd: dict[str, Any]) -> bool:
        assert self._api is not None
        spec = crd["spec"]
        plural = spec["names"]["plural"]
        for v in spec.get("versions") or []:
            if not v.get("served"):
                continue
            try:
                doc = await request_json(self._api, "GET", f"/apis/{spec['group']}/{v['name']}")
            except RestError as e:
                # Until the group/version is served kube-apiserver answers a plain-text
                # "404 page not found"; while it starts, 503. Both mean "not yet".
                if e.status in (404, 0) or e.retriable:
                    return False
                raise
            if not isinstance(doc, dict):
                return False
            if not any(r.get("name") == plural for r in doc.get("resources") or []):
                return False
        return True

    # -- ServiceAccounts ---------------------------------------------------------------------------

    async def service_account_token(
        self, namespace: str, name: str, *, expiration_seconds: int = 3600, audiences: list[str] | None = None
    ) -> str:
        """A token for an existing ServiceAccount, from its TokenRequest subresource."""
        assert self._api is not None, "Environment is not started"
        return await request_token(
            self._api, namespace, name, expiration_seconds=expiration_seconds, audiences=audiences
        )

    async def service_account_kubeconfig(
        self, namespace: str, name: str, path: str | None = None, *, expiration_seconds: int = 3600
    ) -> str:
        """A kubeconfig file that authenticates as the ServiceAccount (its token, no client certificate)."""
        assert self._tmpdir is not None, "Environment is not started"
        token = await self.service_account_token(namespace, name, expiration_seconds=expiration_seconds)
        target = path or os.path.join(self._tmpdir.name, f"kubeconfig-sa-{namespace}-{name}")
        return write_service_account_kubeconfig(target, self.kubeconfig_path, token, namespace)

    async def service_account_config(
        self,
        namespace: str,
        name: str,
        *,
        expiration_seconds: int = 3600,
        qps: float = 100.0,
        burst: int = 200,
    ) -> ClientConfig:
        """A client configuration that acts as the ServiceAccount, as a controller in a Pod would."""
        from kuberay_py.client import load_config

        path = await self.service_account_kubeconfig(namespace, name, expiration_seconds=expiration_seconds)
        return await load_config(path, qps=qps, burst=burst)

    # -- convenience ------------------------------------------------------------------------------

    async def create_namespace(self, name: str | None = None, *, generate_name: str = "test-") -> str:
        assert self._api is not None
        meta = {"name": name} if name else {"generateName": generate_name}
        ns = await request_json(
            self._api,
            "POST",
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": meta},
        )
        return str(ns["metadata"]["name"])

    async def delete_namespace(self, name: str) -> None:
        assert self._api is not None
        with contextlib.suppress(RestError):
            await request_json(self._api, "DELETE", f"/api/v1/namespaces/{name}")
