"""An API server serving KubeRay's CRDs plus the external APIs an integration needs, and the
RayCluster (and optionally RayJob) controller running against it.

The external APIs are components this project cannot run (a batch scheduler, OpenShift,
cert-manager); their minimal CRDs live in ``tests/fixtures`` (``external-crds/README.md``).
Kubernetes' own ``scheduling.k8s.io/v1alpha2`` (KubernetesWAS) is the exception: kube-apiserver
1.36 serves it natively (and refuses a CRD in its built-in group), so the server, real or
built-in, is started with the alpha group switched on instead, as KubeRay's own kind config for
its WAS e2e test does.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

from controllers.raycluster.mtls_pki import CERTIFICATES
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.setup import setup as setup_raycluster
from controllers.rayjob.options import RayJobOptions
from controllers.rayjob.setup import setup as setup_rayjob
from kuberay_py.client import Client
from kuberay_py.client.resources import SECRETS
from kuberay_py.clock import Clock
from kuberay_py.envtest import Environment
from kuberay_py.manager import Manager
from tests.in_loop_manager import in_loop_manager, running_in_loop

ROOT = Path(__file__).resolve().parents[1]
KUBERAY_CRDS = ROOT / "config" / "crd" / "bases"
FIXTURES = ROOT / "tests" / "fixtures"
EXTERNAL = FIXTURES / "external-crds"

#: What each external API needs installed on the API server (files or directories of CRDs).
CRD_STAND_INS: dict[str, Path] = {
    "volcano": EXTERNAL / "volcano-podgroups.yaml",
    "scheduler-plugins": EXTERNAL / "scheduler-plugins-podgroups.yaml",
    "openshift": EXTERNAL / "openshift",
    "cert-manager": FIXTURES / "cert-manager" / "crds.yaml",
}
#: Built-in groups of kube-apiserver 1.36 that are off by default: the flags that serve them
#: (kube-apiserver ``--runtime-config`` and ``--feature-gates``; KubeRay v1.7.0's
#: ``hack/kind-config-kubernetes-was-v1alpha2.yml`` passes the same two).
BUILT_IN_ALPHA: dict[str, tuple[str, ...]] = {
    "kubernetes-was": (
        "--runtime-config=scheduling.k8s.io/v1alpha2=true",
        "--feature-gates=GenericWorkload=true",
    ),
}


def environment(*apis: str, kuberay_crds: bool = True) -> Environment:
    """An (unstarted) Environment serving ``apis`` (keys of :data:`CRD_STAND_INS`)."""
    crds = [str(KUBERAY_CRDS)] if kuberay_crds else []
    flags: list[str] = []
    for api in apis:
        if api in BUILT_IN_ALPHA:
            flags += BUILT_IN_ALPHA[api]
        else:
            crds.append(str(CRD_STAND_INS[api]))
    return Environment(crds, apiserver_args=flags)


@dataclasses.dataclass(frozen=True)
class Running:
    manager: Manager
    task: asyncio.Task[None]  # Manager.run: done when the manager stopped or failed


@contextlib.asynccontextmanager
async def operator(
    env: Environment,
    namespaces: list[str],
    options: RayClusterOptions | None = None,
    *,
    rayjob: RayJobOptions | None = None,
    clock: Clock | None = None,
) -> AsyncIterator[Running]:
    """The RayCluster controller (and the RayJob one when ``rayjob`` is given), watching only
    ``namespaces``, until the block ends; then stopped, and its error (if it failed) raised."""
    manager = in_loop_manager(env.client_config, clock=clock, namespaces=namespaces)
    setup_raycluster(manager, max_concurrent_reconciles=2, options=options or RayClusterOptions.from_env({}))
    if rayjob is not None:
        setup_rayjob(manager, options=rayjob)
    async with running_in_loop(manager) as task:
        yield Running(manager, task)


def with_options(**changes: object) -> RayClusterOptions:
    """The default RayCluster options (no operator environment) with ``changes``."""
    return dataclasses.replace(RayClusterOptions.from_env({}), **changes)  # type: ignore[arg-type]


async def issue(client: Client, namespace: str, cert_name: str, secret_name: str) -> None:
    """What cert-manager does for a Certificate, as far as the operator reads it: the Secret with
    a key pair and CA, then the Certificate's Ready condition for its generation."""
    data = {k: base64.b64encode(b"pem").decode() for k in ("tls.crt", "tls.key", "ca.crt")}
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": secret_name},
        "type": "kubernetes.io/tls",
    }
    await client.create(SECRETS, {**secret, "data": data}, namespace)
    cert = await client.get(CERTIFICATES, cert_name, namespace)
    ready = {"type": "Ready", "status": "True", "observedGeneration": cert["metadata"]["generation"]}
    await client.update_status(CERTIFICATES, {**cert, "status": {"conditions": [ready]}})


async def issue_pending(client: Client, namespace: str) -> None:
    """:func:`issue` for every Certificate of the namespace that is not Ready yet."""
    for cert in (await client.list(CERTIFICATES, namespace))["items"]:
        conditions = (cert.get("status") or {}).get("conditions") or []
        if not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
            await issue(client, namespace, cert["metadata"]["name"], cert["spec"]["secretName"])
