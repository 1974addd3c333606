"""``tlsOptions`` end to end (gate RayClusterMTLS), with and without cert-manager's CRDs.

Without cert-manager the spec is invalid, as in KubeRay v1.7.0: one Warning, nothing created.
With its CRDs installed (``tests/fixtures/cert-manager``), the operator builds the PKI objects and
creates no Pod until cert-manager has issued both leaf certificates; issuing is simulated here
only as far as the operator reads it (the Certificate's Ready condition and the Secret). Each
test has its own API server, since installed CRDs are what it is about.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml

from controllers import constants as C
from controllers.api.gates import ClusterGates
from controllers.raycluster.mtls_pki import CERTIFICATES, ISSUERS
from kuberay_py.client import Client, NotFound
from kuberay_py.client.resources import EVENTS, PODS, SECRETS
from tests import external_apis
from tests.polling import eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

SAMPLES = external_apis.FIXTURES / "kuberay" / "samples"
NS = "tls"


@contextlib.asynccontextmanager
async def tls_operator(*apis: str) -> AsyncIterator[Client]:
    """A fresh API server serving ``apis`` and KubeRay's CRDs, with the gate on and the operator
    running; a client on it."""
    async with external_apis.environment(*apis) as env:
        await env.create_namespace(NS)
        options = external_apis.with_options(gates=ClusterGates(mtls=True))
        async with external_apis.operator(env, [NS], options):
            client = env.new_client()
            try:
                yield client
            finally:
                await client.close()


def tls_cluster() -> dict[str, Any]:
    """KubeRay's mTLS sample (``tlsOptions.enabled: true``, one worker)."""
    body: dict[str, Any] = yaml.safe_load((SAMPLES / "ray-cluster.mtls.yaml").read_text())
    return body


async def notes(client: Client, reason: str) -> list[str]:
    return [e.get("note", "") for e in (await client.list(EVENTS, NS))["items"] if e.get("reason") == reason]


async def names(client: Client, res: Any) -> set[str]:
    return {o["metadata"]["name"] for o in (await client.list(res, NS))["items"]}


async def test_without_cert_manager_the_spec_is_invalid() -> None:
    async with tls_operator() as client:
        await client.create(C.RAYCLUSTERS, tls_cluster(), NS)
        [message] = await eventually(lambda: notes(client, C.EVENT_INVALID_RAYCLUSTER_SPEC), "the Warning")
        name = tls_cluster()["metadata"]["name"]
        assert message == (  # KubeRay's event, word for word
            f"The RayCluster spec is invalid {NS}/{name}: "
            "tlsOptions requires cert-manager, but cert-manager is not installed"
        )
        assert (await client.list(PODS, NS))["items"] == []


async def test_with_cert_manager_the_pki_comes_first_then_the_pods() -> None:
    async with tls_operator("cert-manager") as client:
        created = await client.create(C.RAYCLUSTERS, tls_cluster(), NS)
        uid = created["metadata"]["uid"]

        async def pki() -> bool:
            issuers, certs = await names(client, ISSUERS), await names(client, CERTIFICATES)
            return issuers == {
                "ray-selfsigned-issuer-raycluster-mtls",
                "ray-ca-issuer-raycluster-mtls",
            } and certs == {
                "ray-ca-certificate-raycluster-mtls",
                "ray-head-cert-raycluster-mtls",
                "ray-worker-cert-raycluster-mtls",
            }

        await eventually(pki, "the Issuers and Certificates")
        head_cert = await client.get(CERTIFICATES, "ray-head-cert-raycluster-mtls", NS)
        assert head_cert["spec"]["dnsNames"] == [
            "localhost",
            "raycluster-mtls-head-svc.tls.svc.cluster.local",
        ]
        assert head_cert["spec"]["ipAddresses"] == ["127.0.0.1"]
        assert head_cert["spec"]["secretName"] == "ray-head-secret-raycluster-mtls"
        assert head_cert["spec"]["issuerRef"] == {
            "name": "ray-ca-issuer-raycluster-mtls",
            "kind": "Issuer",
            "group": "cert-manager.io",
        }
        assert [(r["uid"], r["controller"]) for r in head_cert["metadata"]["ownerReferences"]] == [
            (uid, True)
        ]
        ca = await client.get(CERTIFICATES, "ray-ca-certificate-raycluster-mtls", NS)
        assert (
            ca["spec"]["isCA"] is True and ca["spec"]["secretName"] == f"raycluster-mtls-ca-secret-{uid[:8]}"
        )
        assert await eventually(lambda: notes(client, "MTLSCertsNotReady"), "waiting for issuance")
        assert (await client.list(PODS, NS))["items"] == [], "no Pod before its certificate"

        await external_apis.issue(
            client, NS, "ray-head-cert-raycluster-mtls", "ray-head-secret-raycluster-mtls"
        )
        await external_apis.issue(
            client, NS, "ray-worker-cert-raycluster-mtls", "ray-worker-secret-raycluster-mtls"
        )

        async def pods() -> list[dict[str, Any]] | None:
            items = (await client.list(PODS, NS))["items"]
            return items if len(items) == 2 else None

        for pod in await eventually(pods, "the head and the worker"):
            node_type = pod["metadata"]["labels"][C.RAY_NODE_TYPE_LABEL_KEY]
            secret = (
                "ray-head-secret-raycluster-mtls"
                if node_type == "head"
                else "ray-worker-secret-raycluster-mtls"
            )
            assert {"name": "ray-tls", "secret": {"secretName": secret, "defaultMode": 420}} in pod["spec"][
                "volumes"
            ]
            ray = pod["spec"]["containers"][0]
            env_names = [e["name"] for e in ray["env"]]
            assert {"RAY_USE_TLS", "RAY_TLS_SERVER_CERT", "RAY_TLS_SERVER_KEY", "RAY_TLS_CA_CERT"} <= set(
                env_names
            )
            assert {"name": "ray-tls", "mountPath": "/etc/ray/tls", "readOnly": True} in ray["volumeMounts"]
            assert pod["spec"]["initContainers"][0]["name"] == "wait-for-tls-ip-san"
        assert await eventually(lambda: notes(client, "MTLSPKIReady"), "the PKI ready")

        async def secret_owned() -> bool:
            secret = await client.get(SECRETS, "ray-head-secret-raycluster-mtls", NS)
            return [r["name"] for r in secret["metadata"].get("ownerReferences") or []] == [
                "ray-head-cert-raycluster-mtls"
            ]

        await eventually(secret_owned, "the Secret owned by its Certificate")

        # A head Pod IP joins the head certificate's SANs.
        head = next(
            p for p in await pods() or [] if p["metadata"]["labels"][C.RAY_NODE_TYPE_LABEL_KEY] == "head"
        )
        fresh = await client.get(PODS, head["metadata"]["name"], NS)
        await client.update_status(PODS, {**fresh, "status": {"phase": "Running", "podIP": "10.1.0.7"}})

        async def san() -> bool:
            try:
                cert = await client.get(CERTIFICATES, "ray-head-cert-raycluster-mtls", NS)
            except NotFound:
                return False
            return bool(cert["spec"]["ipAddresses"] == ["10.1.0.7", "127.0.0.1"])

        await eventually(san, "the head Pod IP in the certificate")
        assert "Updated head certificate SANs (IPs: [10.1.0.7 127.0.0.1])" in await notes(
            client, "MTLSCertificatesUpdated"
        )
