"""Registers KubeRay's validating webhooks on a webhook server, at KubeRay's paths.

The paths are the ones controller-runtime derives from the type (``/validate-<group with dashes>-
<version>-<lowercase kind>``) and that ``config/webhook/manifests.yaml`` points kube-apiserver at.
"""

from __future__ import annotations

from kuberay_py.webhook import WebhookServer, validating_handler

from .validators import RAYCLUSTER, RAYJOB, RAYSERVICE

__all__ = ["WEBHOOK_PATHS", "setup_webhooks"]

WEBHOOK_PATHS = {
    "RayCluster": "/validate-ray-io-v1-raycluster",
    "RayJob": "/validate-ray-io-v1-rayjob",
    "RayService": "/validate-ray-io-v1-rayservice",
}


def setup_webhooks(server: WebhookServer) -> None:
    for validator in (RAYCLUSTER, RAYJOB, RAYSERVICE):
        server.register(WEBHOOK_PATHS[validator.kind], validating_handler(validator))
