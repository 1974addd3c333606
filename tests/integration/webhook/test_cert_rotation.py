"""The webhook server picks up a renewed serving certificate without a restart: after the files are
replaced, the next poll of the certificate watcher loads them and the next TLS handshake presents
the new certificate; the API server (same CA) keeps calling it."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import pytest

from controllers.constants import RAYCLUSTERS
from controllers.webhooks import setup_webhooks
from kuberay_py.client import ApiError
from kuberay_py.clock import FakeClock
from kuberay_py.envtest import Environment, WebhookInstallOptions
from kuberay_py.webhook import WebhookServer
from tests.integration.webhook.conftest import CRDS, WEBHOOK_MANIFESTS, sample, server_options
from tests.polling import eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")


async def _presented(options: WebhookInstallOptions) -> bytes:
    """The DER certificate the server presents in a fresh handshake (verified against the CA)."""
    ctx = ssl.create_default_context(cadata=options.ca_data.decode())
    _, writer = await asyncio.open_connection(options.local_serving_host, options.local_serving_port, ssl=ctx)
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()
    assert isinstance(der, bytes)
    return der


def _on_disk(options: WebhookInstallOptions) -> bytes:
    return ssl.PEM_cert_to_DER_cert((Path(options.local_serving_cert_dir) / "tls.crt").read_text())


async def test_replaced_certificate_is_served_after_the_next_poll() -> None:
    options = WebhookInstallOptions(paths=[WEBHOOK_MANIFESTS])
    clock = FakeClock()
    async with Environment([CRDS], webhook_install_options=options) as env, env.new_client() as client:
        server = WebhookServer(server_options(options, cert_reload_interval=10.0), clock=clock)
        setup_webhooks(server)
        await server.start()
        try:
            first = _on_disk(options)
            assert await _presented(options) == first

            options.rotate_serving_cert()
            second = _on_disk(options)
            assert second != first
            assert await _presented(options) == first  # not polled yet

            await eventually(lambda: _armed(clock), "certificate watcher waiting for its next poll")
            await clock.advance(10.0)
            assert server.certs is not None
            await eventually(lambda: _reloaded(server), "certificate reloaded")
            assert await _presented(options) == second

            # kube-apiserver trusts the new pair too (same CA): reviews keep flowing.
            with pytest.raises(ApiError) as info:
                await client.create(
                    RAYCLUSTERS, sample("ray-cluster.sample.yaml", name="after.rotation"), "default"
                )
            assert info.value.status == 422 and "vraycluster.kb.io" in info.value.message
        finally:
            await server.stop()


async def _armed(clock: FakeClock) -> bool:
    return clock.sleepers > 0


async def _reloaded(server: WebhookServer) -> bool:
    return server.certs is not None and server.certs.reloads == 1
