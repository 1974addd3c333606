"""config/webhook, config/certmanager and config/default-with-webhooks: they install, and they fit
together and with the operator (paths, port, certificate directory, Secret, Service, CA injection).

kustomize's two strategic-merge patches are applied by the API server itself (a Deployment and a
ValidatingWebhookConfiguration created in a throw-away environment, then patched), which is the
merge kustomize performs; where ``kubectl`` is installed, ``kubectl kustomize`` must render the same.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from controllers.cli.flags import OperatorFlags
from controllers.cli.operator import webhooks_enabled
from controllers.webhooks import WEBHOOK_PATHS
from kuberay_py.client import Resource, resources
from kuberay_py.envtest import Environment
from kuberay_py.envtest.webhooks import VALIDATING_WEBHOOK_CONFIGURATIONS
from kuberay_py.webhook import DEFAULT_CERT_DIR, DEFAULT_PORT
from tests.integration.test_config_manifests import FIELD_MANAGER, default_install, kustomize_files
from tests.integration.webhook.conftest import CRDS

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / "config"
CERT_MANAGER_CRDS = str(ROOT / "tests" / "fixtures" / "cert-manager" / "crds.yaml")
DEPLOYMENTS = Resource("apps", "v1", "Deployment", "deployments")
CERTIFICATES = Resource("cert-manager.io", "v1", "Certificate", "certificates")
ISSUERS = Resource("cert-manager.io", "v1", "Issuer", "issuers")


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    [doc] = [d for d in docs if d["kind"] == kind]
    return doc


WEBHOOK_DOCS = [d for f in kustomize_files(CONFIG / "webhook") for d in _docs(f)]
CERT_DOCS = [d for f in kustomize_files(CONFIG / "certmanager") for d in _docs(f)]


def test_every_file_is_listed_and_the_overlay_uses_them() -> None:
    for directory in ("webhook", "certmanager"):
        listed = {p.resolve() for p in kustomize_files(CONFIG / directory)}
        present = {p.resolve() for p in (CONFIG / directory).glob("*.yaml") if p.name != "kustomization.yaml"}
        assert present == listed, f"config/{directory}"
    overlay = yaml.safe_load((CONFIG / "default-with-webhooks" / "kustomization.yaml").read_text())
    assert overlay["resources"] == ["../default", "../webhook", "../certmanager"]
    patches = {p["path"] for p in overlay["patches"]}
    present = {
        p.name for p in (CONFIG / "default-with-webhooks").glob("*.yaml") if p.name != "kustomization.yaml"
    }
    assert patches == present


def test_webhooks_are_kuberays_and_point_at_the_operators_paths() -> None:
    config = _one(WEBHOOK_DOCS, "ValidatingWebhookConfiguration")
    service = _one(WEBHOOK_DOCS, "Service")
    hooks = {h["name"]: h for h in config["webhooks"]}
    assert sorted(hooks) == ["vraycluster.kb.io", "vrayjob.kb.io", "vrayservice.kb.io"]
    for kind, path in WEBHOOK_PATHS.items():
        hook = hooks[f"v{kind.lower()}.kb.io"]
        assert hook["clientConfig"]["service"] == {
            "name": service["metadata"]["name"],
            "namespace": service["metadata"]["namespace"],
            "path": path,
        }
        assert hook["failurePolicy"] == "Fail" and hook["sideEffects"] == "None"
        assert hook["admissionReviewVersions"] == ["v1"]
        assert hook["rules"] == [
            {
                "apiGroups": ["ray.io"],
                "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": [f"{kind.lower()}s"],
            }
        ]
    assert [(p["port"], p["targetPort"]) for p in service["spec"]["ports"]] == [(443, "webhook-server")]


def test_the_certificate_covers_the_service_and_feeds_the_mounted_secret() -> None:
    service = _one(WEBHOOK_DOCS, "Service")
    certificate, issuer = _one(CERT_DOCS, "Certificate"), _one(CERT_DOCS, "Issuer")
    name, namespace = service["metadata"]["name"], service["metadata"]["namespace"]
    assert certificate["spec"]["dnsNames"] == [
        f"{name}.{namespace}.svc",
        f"{name}.{namespace}.svc.cluster.local",
    ]
    assert certificate["spec"]["issuerRef"] == {"kind": "Issuer", "name": issuer["metadata"]["name"]}
    assert certificate["metadata"]["namespace"] == issuer["metadata"]["namespace"] == namespace
    patch = _docs(CONFIG / "default-with-webhooks" / "manager_webhook_patch.yaml")[0]
    [volume] = patch["spec"]["template"]["spec"]["volumes"]
    assert volume["secret"]["secretName"] == certificate["spec"]["secretName"]
    injection = _docs(CONFIG / "default-with-webhooks" / "webhookcainjection_patch.yaml")[0]
    assert injection["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == (
        f"{certificate['metadata']['namespace']}/{certificate['metadata']['name']}"
    )


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def patched() -> AsyncIterator[dict[str, dict[str, Any]]]:
    """The Deployment and the webhook configuration after the overlay's patches, merged by the API server."""
    async with Environment([CRDS, CERT_MANAGER_CRDS]) as env, env.new_client() as client:
        out: dict[str, dict[str, Any]] = {}
        install = default_install()
        namespace = _one(install, "Namespace")
        await client.create(resources.NAMESPACES, namespace)
        ns = namespace["metadata"]["name"]
        deployment = _one(install, "Deployment")
        await client.create(DEPLOYMENTS, deployment, ns)
        manager_patch = _docs(CONFIG / "default-with-webhooks" / "manager_webhook_patch.yaml")[0]
        out["Deployment"] = await client.patch(
            DEPLOYMENTS, deployment["metadata"]["name"], manager_patch, ns, patch_type="strategic"
        )
        config = _one(WEBHOOK_DOCS, "ValidatingWebhookConfiguration")
        await client.create(VALIDATING_WEBHOOK_CONFIGURATIONS, config)
        injection = _docs(CONFIG / "default-with-webhooks" / "webhookcainjection_patch.yaml")[0]
        out["ValidatingWebhookConfiguration"] = await client.patch(
            VALIDATING_WEBHOOK_CONFIGURATIONS, config["metadata"]["name"], injection, patch_type="strategic"
        )
        for doc, res in (
            (_one(WEBHOOK_DOCS, "Service"), resources.SERVICES),
            *((d, _cm(d)) for d in CERT_DOCS),
        ):
            applied = await client.patch(
                res,
                doc["metadata"]["name"],
                doc,
                doc["metadata"].get("namespace"),
                patch_type="apply",
                field_manager=FIELD_MANAGER,
                force=True,
                dry_run=True,
            )
            assert applied["metadata"]["name"] == doc["metadata"]["name"]
        yield out


def _cm(doc: dict[str, Any]) -> Resource:
    return CERTIFICATES if doc["kind"] == "Certificate" else ISSUERS


async def test_the_patched_operator_serves_webhooks_where_the_manifests_expect(
    patched: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    pod = patched["Deployment"]["spec"]["template"]
    [container] = pod["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["POD_NAMESPACE"] is None  # the base's variables stay
    monkeypatch.setenv("ENABLE_WEBHOOKS", env["ENABLE_WEBHOOKS"])
    assert webhooks_enabled(OperatorFlags())
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["webhook-server"] == DEFAULT_PORT and "http-metrics" in ports
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    assert mounts["cert"]["mountPath"] == DEFAULT_CERT_DIR and mounts["cert"]["readOnly"] is True
    assert "tmp" in mounts
    service = _one(WEBHOOK_DOCS, "Service")
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    annotations = patched["ValidatingWebhookConfiguration"]["metadata"]["annotations"]
    assert annotations["cert-manager.io/inject-ca-from"] == "kuberay-system/kuberay-serving-cert"
    hooks = patched["ValidatingWebhookConfiguration"]["webhooks"]
    assert [h["timeoutSeconds"] for h in hooks] == [10, 10, 10]  # the API server's default


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
async def test_kubectl_kustomize_renders_the_same_overlay(patched: dict[str, dict[str, Any]]) -> None:
    proc = await asyncio.create_subprocess_exec(
        "kubectl",
        "kustomize",
        str(CONFIG / "default-with-webhooks"),
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "KUBECONFIG": os.devnull},
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0
    rendered = out.decode()
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    kinds = sorted({d["kind"] for d in docs})
    assert {"ValidatingWebhookConfiguration", "Certificate", "Issuer", "Deployment"} <= set(kinds)
    deployment = _one(docs, "Deployment")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    [ours] = patched["Deployment"]["spec"]["template"]["spec"]["containers"]
    assert {e["name"] for e in container["env"]} == {e["name"] for e in ours["env"]}
    assert {m["mountPath"] for m in container["volumeMounts"]} == {
        m["mountPath"] for m in ours["volumeMounts"]
    }
    assert {p["containerPort"] for p in container["ports"]} == {p["containerPort"] for p in ours["ports"]}
    config = _one(docs, "ValidatingWebhookConfiguration")
    assert config["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": "kuberay-system/kuberay-serving-cert"
    }
