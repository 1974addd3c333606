"""KubeRay's optional validating admission webhooks (``ENABLE_WEBHOOKS=true``)."""

from .setup import WEBHOOK_PATHS, setup_webhooks

__all__ = ["WEBHOOK_PATHS", "setup_webhooks"]
