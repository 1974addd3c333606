"""Installing admission webhook configurations that point at a local server (envtest's
``WebhookInstallOptions``).

The manifests are the ones a cluster gets (``config/webhook``), with ``clientConfig`` pointing at
a Service. Under test the webhook server runs in the test process, so each webhook's
``clientConfig`` is rewritten to ``https://<host>:<port><path>`` with the generated CA as its
``caBundle``; the serving pair for that host is written to ``local_serving_cert_dir``, where the
webhook server reads it. The same works against a real kube-apiserver, which calls the URL.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import structlog
from kubernetes_asyncio.client import ApiClient

from kuberay_py.client import Resource

from .controlplane import free_port
from .crdfiles import read_kind
from .rest import RestError, create_or_replace, request_json
from .webhookcerts import WebhookCA

__all__ = [
    "VALIDATING_WEBHOOK_CONFIGURATIONS",
    "WebhookInstallOptions",
    "install_webhooks",
    "read_webhook_configurations",
    "uninstall_webhooks",
]

log = structlog.get_logger("kuberay_py.envtest")

VALIDATING_WEBHOOK_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "ValidatingWebhookConfiguration",
    "validatingwebhookconfigurations",
    namespaced=False,
)


def read_webhook_configurations(paths: Sequence[str | Path]) -> list[dict[str, Any]]:
    """Every ValidatingWebhookConfiguration under ``paths`` (files or directories, not recursive)."""
    return read_kind(paths, "ValidatingWebhookConfiguration", "webhook configuration")


@dataclass
class WebhookInstallOptions:
    """Which configurations to install and where the local webhook server serves.

    ``local_serving_port`` 0 picks a free port; ``local_serving_cert_dir`` "" uses a directory
    inside the environment's temporary directory. After :meth:`setup`, the port, the directory and
    :attr:`ca_data` are the ones to give the webhook server.
    """

    paths: list[str | Path] = field(default_factory=list)
    validating_webhooks: list[dict[str, Any]] = field(default_factory=list)
    local_serving_host: str = "127.0.0.1"
    local_serving_port: int = 0
    local_serving_cert_dir: str = ""
    ca: WebhookCA | None = None
    installed: list[str] = field(default_factory=list)

    def setup(self, work_dir: str | Path) -> None:
        """Pick the port, make the CA and the serving pair (called by the Environment)."""
        work = Path(work_dir)
        if not self.local_serving_port:
            self.local_serving_port = free_port(self.local_serving_host)
        if not self.local_serving_cert_dir:
            self.local_serving_cert_dir = str(work / "webhook-serving-certs")
        self.ca = WebhookCA(work / "webhook-ca", self.local_serving_host)
        self.ca.issue(self.local_serving_cert_dir)

    @property
    def ca_data(self) -> bytes:
        if self.ca is None:
            raise RuntimeError("WebhookInstallOptions.setup has not run")
        return self.ca.ca_data

    def rotate_serving_cert(self) -> None:
        """Replace the serving pair with a new one from the same CA (a cert-manager renewal)."""
        if self.ca is None:
            raise RuntimeError("WebhookInstallOptions.setup has not run")
        self.ca.issue(self.local_serving_cert_dir)

    def url(self, path: str) -> str:
        host = self.local_serving_host
        host = f"[{host}]" if ":" in host else host
        return f"https://{host}:{self.local_serving_port}{path}"

    def configurations(self) -> list[dict[str, Any]]:
        """The configurations to install, each webhook's clientConfig rewritten to the local server."""
        bundle = base64.b64encode(self.ca_data).decode()
        out = []
        for doc in [*read_webhook_configurations(self.paths), *self.validating_webhooks]:
            doc = copy.deepcopy(doc)
            for hook in doc.get("webhooks") or []:
                config = hook.get("clientConfig") or {}
                path = str((config.get("service") or {}).get("path") or "")
                if not path and config.get("url"):
                    path = urlsplit(str(config["url"])).path
                hook["clientConfig"] = {"url": self.url(path or "/"), "caBundle": bundle}
            out.append(doc)
        return out


async def install_webhooks(
    api: ApiClient, options: WebhookInstallOptions, work_dir: str | Path, timeout: float = 30.0
) -> None:
    """Set up the serving pair and create (or replace) the configurations in the API server."""
    await asyncio.to_thread(options.setup, work_dir)
    deadline = asyncio.get_running_loop().time() + timeout
    for doc in options.configurations():
        await create_or_replace(api, VALIDATING_WEBHOOK_CONFIGURATIONS.path(), doc, deadline)
        options.installed.append(doc["metadata"]["name"])
    log.info(
        "envtest.webhooks_installed",
        configurations=options.installed,
        url=options.url(""),
        cert_dir=options.local_serving_cert_dir,
    )


async def uninstall_webhooks(api: ApiClient, options: WebhookInstallOptions) -> None:
    """Delete what :func:`install_webhooks` created (an existing cluster outlives the test)."""
    while options.installed:
        name = options.installed.pop()
        with contextlib.suppress(RestError):
            await request_json(api, "DELETE", VALIDATING_WEBHOOK_CONFIGURATIONS.path(name=name))
