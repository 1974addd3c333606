"""An envtest API server with KubeRay's webhook configurations installed, and the operator
started with ``ENABLE_WEBHOOKS=true`` serving them, as ``config/default-with-webhooks`` runs it."""

from __future__ import annotations

import asyncio
import copy
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest_asyncio
import yaml

from controllers.cli.flags import OperatorFlags
from controllers.cli.operator import build_manager
from kuberay_py.client import Client
from kuberay_py.envtest import Environment, WebhookInstallOptions
from kuberay_py.manager import Manager
from kuberay_py.webhook import WebhookServerOptions
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


@contextmanager
def environ(name: str, value: str) -> Iterator[None]:
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            del os.environ[name]
        else:
            os.environ[name] = previous


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
        with environ("ENABLE_WEBHOOKS", "true"):  # KubeRay's switch, read when the manager is built
            manager = build_manager(env.client_config, flags, leader_election=False)
        run = asyncio.create_task(manager.run(install_signal_handlers=False))
        try:
            await eventually(lambda: _ready(manager), "operator ready", 60, tolerate=(OSError,))
            yield Operator(env, manager, options)
        finally:
            manager.stop()
            await run


async def _ready(manager: Manager) -> bool:
    return manager.health_url is not None and await manager.readyz.healthy()


@pytest_asyncio.fixture(loop_scope="session")
async def client(operator: Operator) -> AsyncIterator[Client]:
    c = operator.env.new_client()
    try:
        yield c
    finally:
        await c.close()
