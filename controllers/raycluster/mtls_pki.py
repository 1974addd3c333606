"""mTLS certificates from cert-manager (gate RayClusterMTLS): discovery, the PKI, the readiness gate.

KubeRay v1.7.0 needs cert-manager for ``tlsOptions.enabled``; kuberay-py does the operator's side
the same way, and cert-manager does the issuing:

* **Discovery.** Whether ``cert-manager.io/v1`` serves Certificates and Issuers is asked once and
  remembered (KubeRay asks at startup; installing cert-manager later takes a restart either way).
  Without it a TLS cluster is an invalid spec ("tlsOptions requires cert-manager, but cert-manager
  is not installed") and nothing is created.
* **The PKI** (its own controller, ``raycluster-mtls``, as KubeRay's): a self-signed Issuer
  ``ray-selfsigned-issuer-<c>``, the CA Certificate ``ray-ca-certificate-<c>`` (RSA 4096, ~10 years,
  Secret ``<c>-ca-secret-<uid[:8]>``), the CA Issuer ``ray-ca-issuer-<c>``, and the leaf
  Certificates ``ray-head-cert-<c>`` (localhost, the head Service FQDN, 127.0.0.1 and the head Pod
  IPs) and ``ray-worker-cert-<c>`` (localhost, 127.0.0.1, the worker Pod IPs), 90 days, renewed
  15 days before. All are controlled by the RayCluster; the IP lists follow the Pods. Each
  Certificate's Secret gets the Certificate as an owner, so it goes with it. Events tell when the
  PKI is ready, still being issued, failing or about to expire.
* **No Pod before its certificate.** The RayCluster controller creates Pods only when both leaf
  Certificates are Ready at their current generation and both Secrets hold ``tls.crt``,
  ``tls.key`` and ``ca.crt``.

Certificates and Issuers are read with GETs, not watched: watching a kind whose CRD may be absent
would keep the cache from syncing. The PKI controller requeues itself (30 s while waiting, 1 min
once ready), as KubeRay's does.
"""

from __future__ import annotations

import asyncio
import copy
from datetime import datetime
from typing import TYPE_CHECKING, Any

from controllers import constants as C
from controllers.common import cluster as common
from controllers.common.objects import managed_here
from controllers.common.scope import Deps
from controllers.raycluster.mtls import tls_enabled, tls_secret_name
from controllers.raycluster.options import RayClusterOptions
from kuberay_py.client import ApiError, Client, NotFound, Resource
from kuberay_py.client.resources import PODS, SECRETS
from kuberay_py.controller import Request, Result
from kuberay_py.log import get_logger
from kuberay_py.objects import Obj

if TYPE_CHECKING:
    from controllers.raycluster.context import ClusterContext

__all__ = [
    "CERTIFICATES",
    "CONTROLLER_NAME",
    "EVENT_SOURCE",
    "ISSUERS",
    "CertManager",
    "MTLSReconciler",
    "PKINotReady",
    "build_pki",
    "check_secrets_ready",
    "wants_pods",
]

CERTIFICATES = Resource("cert-manager.io", "v1", "Certificate", "certificates")
ISSUERS = Resource("cert-manager.io", "v1", "Issuer", "issuers")
# The controller's name (the metrics' ``controller`` label, logs) and its Events' source.
CONTROLLER_NAME = "raycluster-mtls"
EVENT_SOURCE = "raycluster-mtls-controller"
WAITING_REQUEUE = 30.0
READY_REQUEUE = 60.0
_SECRET_KEYS = ("tls.crt", "tls.key", "ca.crt")
_LEAF_USAGES = ["digital signature", "key encipherment", "server auth", "client auth"]

log = get_logger(__name__)


class PKINotReady(Exception):
    """The certificates a new Pod mounts are not issued yet (retried, rate-limited)."""


class CertManager:
    """``await available()``: whether cert-manager's API is served, asked once."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._available: bool | None = None
        self._lock = asyncio.Lock()

    async def available(self) -> bool:
        if self._available is None:
            async with self._lock:
                if self._available is None:
                    found = await self._client.served(CERTIFICATES) and await self._client.served(ISSUERS)
                    if not found:
                        log.error("cert-manager API not found; RayClusters with tlsOptions cannot start")
                    self._available = found
        return self._available


def _names(cluster: Obj) -> dict[str, str]:
    name, uid = cluster["metadata"]["name"], str(cluster["metadata"]["uid"])
    return {
        "selfsigned": f"ray-selfsigned-issuer-{name}",
        "ca_cert": f"ray-ca-certificate-{name}",
        "ca_secret": f"{name}-ca-secret-{uid[:8]}",
        "ca_issuer": f"ray-ca-issuer-{name}",
        "head_cert": f"ray-head-cert-{name}",
        "worker_cert": f"ray-worker-cert-{name}",
    }


def _labels(cluster: Obj, component: str) -> dict[str, str]:
    return {
        C.KUBERNETES_APPLICATION_NAME_LABEL_KEY: C.APPLICATION_NAME,
        C.KUBERNETES_CREATED_BY_LABEL_KEY: C.COMPONENT_NAME,
        "app.kubernetes.io/component": component,
        C.RAY_CLUSTER_LABEL_KEY: cluster["metadata"]["name"],
    }


def _object(res: Resource, cluster: Obj, name: str, component: str, spec: dict[str, Any]) -> Obj:
    return {
        "apiVersion": res.api_version,
        "kind": res.kind,
        "metadata": {
            "name": name,
            "namespace": cluster["metadata"]["namespace"],
            "labels": _labels(cluster, component),
            "ownerReferences": [common.controller_ref(cluster)],
        },
        "spec": spec,
    }


def _issuer_ref(name: str) -> dict[str, str]:
    return {"name": name, "kind": "Issuer", "group": "cert-manager.io"}


def _ips(pod_ips: list[str]) -> list[str]:
    """Sorted, without duplicates or blanks, always with 127.0.0.1 (KubeRay's set order)."""
    return sorted({ip for ip in pod_ips if ip} | {"127.0.0.1"})


def leaf_spec(cluster: Obj, node_type: str, pod_ips: list[str], cluster_domain: str) -> dict[str, Any]:
    names = _names(cluster)
    dns = ["localhost"]
    if node_type == C.NODE_TYPE_HEAD:
        dns = sorted({"localhost", common.fqdn_ray_ip(cluster, cluster_domain)})
    return {
        "secretName": tls_secret_name(cluster["metadata"]["name"], node_type),
        "duration": "2160h0m0s",
        "renewBefore": "360h0m0s",
        "dnsNames": dns,
        "ipAddresses": _ips(pod_ips),
        "usages": list(_LEAF_USAGES),
        "issuerRef": _issuer_ref(names["ca_issuer"]),
    }


def build_pki(cluster: Obj, head_ips: list[str], worker_ips: list[str], cluster_domain: str) -> list[Obj]:
    """Issuers and Certificates in creation order: self-signed, CA, CA issuer, head, worker."""
    names = _names(cluster)
    ca_spec = {
        "secretName": names["ca_secret"],
        "isCA": True,
        "commonName": f"ray-ca-{cluster['metadata']['name']}",
        "privateKey": {"algorithm": "RSA", "size": 4096},
        "duration": "87600h0m0s",
        "renewBefore": "720h0m0s",
        "usages": ["cert sign", "crl sign"],
        "issuerRef": _issuer_ref(names["selfsigned"]),
    }
    return [
        _object(ISSUERS, cluster, names["selfsigned"], "selfsigned-issuer", {"selfSigned": {}}),
        _object(CERTIFICATES, cluster, names["ca_cert"], "ca-certificate", ca_spec),
        _object(
            ISSUERS, cluster, names["ca_issuer"], "ca-issuer", {"ca": {"secretName": names["ca_secret"]}}
        ),
        _object(
            CERTIFICATES,
            cluster,
            names["head_cert"],
            "head-certificate",
            leaf_spec(cluster, C.NODE_TYPE_HEAD, head_ips, cluster_domain),
        ),
        _object(
            CERTIFICATES,
            cluster,
            names["worker_cert"],
            "worker-certificate",
            leaf_spec(cluster, C.NODE_TYPE_WORKER, worker_ips, cluster_domain),
        ),
    ]


def _ready(cert: Obj) -> bool:
    """Ready=True for the current spec (a stale Ready after a SAN change does not count)."""
    for cond in (cert.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(
                cond.get("status") == "True"
                and cond.get("observedGeneration") == cert["metadata"].get("generation")
            )
    return False


async def check_secrets_ready(client: Client, cluster: Obj) -> None:
    """Raise :class:`PKINotReady` unless both leaf certificates are issued into complete Secrets."""
    ns, name = cluster["metadata"]["namespace"], cluster["metadata"]["name"]
    for cert_name in (f"ray-head-cert-{name}", f"ray-worker-cert-{name}"):
        try:
            cert = await client.get(CERTIFICATES, cert_name, ns)
        except NotFound:
            raise PKINotReady(f"certificate {cert_name} not found") from None
        if not _ready(cert):
            generation = cert["metadata"].get("generation")
            raise PKINotReady(f"certificate {cert_name} is not ready at current generation {generation}")
    for node_type in (C.NODE_TYPE_HEAD, C.NODE_TYPE_WORKER):
        secret_name = tls_secret_name(name, node_type)
        try:
            secret = await client.get(SECRETS, secret_name, ns)
        except NotFound:
            raise PKINotReady(f"secret {secret_name} not found") from None
        for key in _SECRET_KEYS:
            if key not in (secret.get("data") or {}):
                raise PKINotReady(f"secret {secret_name} missing required key {key}")


def wants_pods(ctx: ClusterContext) -> bool:
    """Whether this reconcile may create Pods: the head is missing or a group is short. Only then
    are the certificates checked, as KubeRay checks them only before creating Pods."""
    spec = common.spec_of(ctx.cluster)
    if spec.get("suspend"):
        return False
    live = [
        p
        for p in ctx.pods
        if not p["metadata"].get("deletionTimestamp")
        and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    ]
    types = [(p["metadata"].get("labels") or {}).get(C.RAY_NODE_TYPE_LABEL_KEY) for p in live]
    if C.NODE_TYPE_HEAD not in types:
        return True
    wanted = sum(
        common.desired_replicas(g) * common.num_of_hosts(g)
        for g in spec.get("workerGroupSpecs") or []
        if not common.group_suspended(ctx.cluster, g)
    )
    return types.count(C.NODE_TYPE_WORKER) < wanted


class MTLSReconciler:
    def __init__(self, deps: Deps[RayClusterOptions], cert_manager: CertManager) -> None:
        self.deps = deps
        self.cert_manager = cert_manager

    def _pod_ips(self, cluster: Obj, node_type: str) -> list[str]:
        pods = self.deps.cache.list(
            PODS,
            cluster["metadata"]["namespace"],
            labels={
                C.RAY_CLUSTER_LABEL_KEY: cluster["metadata"]["name"],
                C.RAY_NODE_TYPE_LABEL_KEY: node_type,
            },
        )
        out = []
        for pod in pods:
            status = pod.get("status") or {}
            if pod["metadata"].get("deletionTimestamp") or status.get("phase") in ("Succeeded", "Failed"):
                continue
            if status.get("podIP"):
                out.append(str(status["podIP"]))
        return out

    async def reconcile(self, request: Request) -> Result:
        cluster = self.deps.cache.get(C.RAYCLUSTERS, request.name, request.namespace)
        if cluster is None or cluster["metadata"].get("deletionTimestamp"):
            return Result()
        if not managed_here(cluster):
            return Result()
        if not tls_enabled(cluster, self.deps.options) or not await self.cert_manager.available():
            return Result()
        head_ips = self._pod_ips(cluster, C.NODE_TYPE_HEAD)
        worker_ips = self._pod_ips(cluster, C.NODE_TYPE_WORKER)
        steps = zip(
            ("self-signed issuer", "CA certificate", "CA issuer", "head certificate", "worker certificate"),
            build_pki(cluster, head_ips, worker_ips, self.deps.options.cluster_domain),
            strict=True,
        )
        for step, desired in steps:
            try:
                await self._apply(cluster, desired)
            except ApiError as exc:
                self.deps.recorder.event(
                    cluster, C.WARNING, "MTLSFailedToReconcile", f"Failed to reconcile mTLS {step}: {exc}"
                )
                raise
        try:
            await check_secrets_ready(self.deps.client, cluster)
        except PKINotReady:
            self.deps.recorder.event(
                cluster, C.NORMAL, "MTLSCertsNotReady", "Waiting for cert-manager to issue mTLS certificates"
            )
            return Result(requeue_after=WAITING_REQUEUE)
        self.deps.recorder.event(
            cluster, C.NORMAL, "MTLSPKIReady", "mTLS PKI is ready: CA, head, and worker certificates issued"
        )
        await self._expiry(cluster)
        return Result(requeue_after=READY_REQUEUE)

    async def _apply(self, cluster: Obj, desired: Obj) -> None:
        ns, name = desired["metadata"]["namespace"], desired["metadata"]["name"]
        if desired["kind"] == "Issuer":
            try:
                await self.deps.client.get(ISSUERS, name, ns)
            except NotFound:
                await self.deps.client.create(ISSUERS, desired, ns)
            return  # an Issuer's spec never changes
        try:
            existing = await self.deps.client.get(CERTIFICATES, name, ns)
        except NotFound:
            await self.deps.client.create(CERTIFICATES, desired, ns)
            return
        component = desired["metadata"]["labels"]["app.kubernetes.io/component"]
        if component in ("head-certificate", "worker-certificate"):
            existing = await self._update_leaf(cluster, existing, desired)
        await self._own_secret(existing)

    async def _update_leaf(self, cluster: Obj, existing: Obj, desired: Obj) -> Obj:
        """Follow the Pod IPs (and the labels); only a changed DNS or IP set is a change."""
        spec = existing.get("spec") or {}
        same_sans = set(spec.get("dnsNames") or []) == set(desired["spec"]["dnsNames"]) and set(
            spec.get("ipAddresses") or []
        ) == set(desired["spec"]["ipAddresses"])
        if same_sans and (existing["metadata"].get("labels") or {}) == desired["metadata"]["labels"]:
            return existing
        body = copy.deepcopy(existing)
        body["metadata"]["labels"] = desired["metadata"]["labels"]
        body["spec"] = desired["spec"]
        refs = [r for r in body["metadata"].get("ownerReferences") or [] if not r.get("controller")]
        body["metadata"]["ownerReferences"] = [*refs, common.controller_ref(cluster)]
        which = (
            "head"
            if desired["metadata"]["labels"]["app.kubernetes.io/component"] == "head-certificate"
            else "worker"
        )
        self.deps.recorder.event(
            cluster,
            C.NORMAL,
            "MTLSCertificatesUpdated",
            f"Updated {which} certificate SANs (IPs: [{' '.join(desired['spec']['ipAddresses'])}])",
        )
        updated: Obj = await self.deps.client.update(CERTIFICATES, body)
        return updated

    async def _own_secret(self, cert: Obj) -> None:
        """The issued Secret goes with its Certificate (an owner reference, not a controller)."""
        ns = cert["metadata"]["namespace"]
        name = (cert.get("spec") or {}).get("secretName")
        if not name:
            return
        try:
            secret = await self.deps.client.get(SECRETS, name, ns)
        except NotFound:
            return  # not issued yet; the next reconcile looks again
        refs = secret["metadata"].get("ownerReferences") or []
        uid = cert["metadata"]["uid"]
        if any(r.get("uid") == uid for r in refs):
            return
        ref = {
            "apiVersion": CERTIFICATES.api_version,
            "kind": "Certificate",
            "name": cert["metadata"]["name"],
            "uid": uid,
        }
        body = copy.deepcopy(secret)
        body["metadata"]["ownerReferences"] = [*refs, ref]
        await self.deps.client.update(SECRETS, body)

    async def _expiry(self, cluster: Obj) -> None:
        name = cluster["metadata"]["name"]
        now = self.deps.clock.utcnow()
        for cert_name in (f"ray-head-cert-{name}", f"ray-worker-cert-{name}", f"ray-ca-certificate-{name}"):
            try:
                cert = await self.deps.client.get(CERTIFICATES, cert_name, cluster["metadata"]["namespace"])
            except NotFound:
                continue
            not_after = (cert.get("status") or {}).get("notAfter")
            if not not_after:
                continue
            remaining = (datetime.fromisoformat(str(not_after).replace("Z", "+00:00")) - now).total_seconds()
            if remaining < 24 * 3600:
                self.deps.recorder.event(
                    cluster,
                    C.WARNING,
                    "MTLSCertificateExpiringSoon",
                    f"TLS certificate {cert_name} expires in {remaining / 3600:.1f} hours; "
                    "Ray does not hot-reload certs so a pod restart will be needed after renewal",
                )
