"""What the API server does when the webhook cannot be called: ``failurePolicy: Fail`` refuses the
write with kube-apiserver's "failed calling webhook" error; ``Ignore`` lets it through. Also an
untrusted serving certificate (the caBundle is another CA's) is a call failure."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from controllers.constants import RAYCLUSTERS
from controllers.webhooks import setup_webhooks
from kuberay_py.client import ApiError, Client
from kuberay_py.envtest import Environment, WebhookInstallOptions
from kuberay_py.envtest.webhookcerts import WebhookCA
from kuberay_py.envtest.webhooks import VALIDATING_WEBHOOK_CONFIGURATIONS
from kuberay_py.webhook import WebhookServer
from tests.api_objects import dry_run_error, get_or_none
from tests.integration.webhook.conftest import CONFIGURATION, CRDS, WEBHOOK_MANIFESTS, sample, server_options
from tests.polling import eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def _stored(client: Client, name: str) -> bool:
    return await get_or_none(client, RAYCLUSTERS, name, "default") is not None


async def test_webhook_down_fail_refuses_and_ignore_admits() -> None:
    options = WebhookInstallOptions(paths=[WEBHOOK_MANIFESTS])
    async with Environment([CRDS], webhook_install_options=options) as env, env.new_client() as client:
        # Nothing serves the webhooks: the configuration points at a port no one listens on.
        body = sample("ray-cluster.sample.yaml", name="no-webhook")
        await eventually(
            lambda: dry_run_error(client, RAYCLUSTERS, body, "default"),
            "the installed configuration in effect",
            tolerate=(),
        )
        with pytest.raises(ApiError) as info:
            await client.create(RAYCLUSTERS, sample("ray-cluster.sample.yaml", name="no-webhook"), "default")
        url = options.url("/validate-ray-io-v1-raycluster")
        host_port = f"{options.local_serving_host}:{options.local_serving_port}"
        assert info.value.status == 500 and info.value.reason == "InternalError"
        assert info.value.message == (
            'Internal error occurred: failed calling webhook "vraycluster.kb.io": failed to call webhook: '
            f'Post "{url}?timeout=10s": dial tcp {host_port}: connect: connection refused'
        )
        assert not await _stored(client, "no-webhook")

        await client.patch(
            VALIDATING_WEBHOOK_CONFIGURATIONS,
            CONFIGURATION,
            [{"op": "replace", "path": "/webhooks/0/failurePolicy", "value": "Ignore"}],
            patch_type="json",
        )

        async def admitted() -> bool:
            try:
                await client.create(
                    RAYCLUSTERS, sample("ray-cluster.sample.yaml", name="no-webhook"), "default"
                )
            except ApiError as err:
                assert err.status == 500, err  # until the API server has seen the new policy
                return False
            return True

        await eventually(admitted, "create admitted with failurePolicy Ignore", tolerate=())
        assert await _stored(client, "no-webhook")


async def test_a_certificate_from_another_ca_is_a_call_failure(tmp_path: Path) -> None:
    options = WebhookInstallOptions(paths=[WEBHOOK_MANIFESTS])
    async with Environment([CRDS], webhook_install_options=options) as env, env.new_client() as client:
        server = WebhookServer(server_options(options))
        setup_webhooks(server)
        await server.start()
        try:
            # Another name too: Go adds a hint to the error when an untrusted CA has the trusted one's name.
            other = WebhookCA(tmp_path / "other-ca", options.local_serving_host, name="another-ca")
            config = await client.get(VALIDATING_WEBHOOK_CONFIGURATIONS, CONFIGURATION)
            for hook in config["webhooks"]:
                hook["clientConfig"]["caBundle"] = base64.b64encode(other.ca_data).decode()
            await client.update(VALIDATING_WEBHOOK_CONFIGURATIONS, config)

            # A name the webhook denies: until the API server has seen the new caBundle, the
            # trusted call answers with that denial (no x509 in it), never an admission.
            async def refused_untrusted() -> str:
                try:
                    await client.create(
                        RAYCLUSTERS, sample("ray-cluster.sample.yaml", name="un.trusted"), "default"
                    )
                except ApiError as err:
                    return err.message if "x509" in err.message else ""
                pytest.fail("the create was admitted although the webhook refuses it in any case")

            message = await eventually(
                refused_untrusted, "refused for the untrusted certificate", tolerate=()
            )
            assert message.startswith('Internal error occurred: failed calling webhook "vraycluster.kb.io": ')
            assert message.endswith(
                "tls: failed to verify certificate: x509: certificate signed by unknown authority"
            )
            assert not await _stored(client, "un.trusted")
        finally:
            await server.stop()
