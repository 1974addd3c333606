"""An envtest API server with KubeRay's webhook configurations installed, and the operator
started with ``ENABLE_WEBHOOKS=true`` serving them, as ``config/default-with-webhooks`` runs it."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from controllers.cli.flags import OperatorFlags
from controllers.cli.operator import build_manager
from controllers.constants import RAYCLUSTERS
from kuberay_py.client import Client
from kuberay_py.envtest import Environment, WebhookInstallOptions
from kuberay_py.manager import Manager
from kuberay_py.webhook import WebhookServerOptions
from tests.api_objects import dry_run_error
from tests.in_loop_manager import running_in_loop
from tests.polling import eventually

ROOT = Path(__file__).resolve().parents[3]
CRDS = str(ROOT / "config" / "crd" / "bases")
WEBHOOK_MANIFESTS = ROOT / "config" / "webhook" / "manifests.yaml"
SAMPLES = ROOT / "config" / "samples"
CONFIGURATION = "kuberay-validating-webhook-configuration"


def sample(file: str, **metadata: Any) -> dict[str, Any]:
    """The sample's Ray object (the first document), with ``metadata`` changed."""
    doc = copy.deepcopy(next(d for d in yaml.safe_load_all((SAMPLES / file).read_text()) if d))
    doc["metadata"].update(metadata)
    return dict(doc)


def server_options(options: WebhookInstallOptions, **extra: Any) -> WebhookServerOptions:
    """The webhook server options that serve where ``options`` installed the configurations."""
    return WebhookServerOptions(
        host=options.local_serving_host,
        port=options.local_serving_port,
        cert_dir=options.local_serving_cert_dir,
        **extra,
    )


@dataclass
class Operator:
    env: Environment
    manager: Manager
    options: WebhookInstallOptions


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def operator() -> AsyncIterator[Operator]:
    options = WebhookInstallOptions(paths=[WEBHOOK_MANIFESTS])
    async with Environment([CRDS], webhook_install_options=options) as env:
        flags = OperatorFlags(
            metrics_addr="127.0.0.1:0",
            health_probe_bind_address="127.0.0.1:0",
            webhook_server=server_options(options),
        )
        with pytest.MonkeyPatch.context() as patch:  # KubeRay's switch, read when the manager is built
            patch.setenv("ENABLE_WEBHOOKS", "true")
            manager = build_manager(env.client_config, flags, leader_election=False)
        async with running_in_loop(manager), env.new_client() as client:
            await eventually(lambda: _ready(manager), "operator ready", 60, tolerate=(OSError,))
            await eventually(lambda: _enforced(client), "the webhook configurations in effect", tolerate=())
            yield Operator(env, manager, options)


async def _ready(manager: Manager) -> bool:
    return manager.health_url is not None and await manager.readyz.healthy()


async def _enforced(client: Client) -> bool:
    """A dry run the webhook refuses is refused (the configurations installed at start are in
    effect)."""
    probe = sample("ray-cluster.sample.yaml", name="1-not-a-dns1035-label")
    err = await dry_run_error(client, RAYCLUSTERS, probe, "default")
    return err is not None and err.status == 422


@pytest_asyncio.fixture(loop_scope="session")
async def client(operator: Operator) -> AsyncIterator[Client]:
    c = operator.env.new_client()
    try:
        yield c
    finally:
        await c.close()
