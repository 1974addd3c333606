"""Talking to Ray: the dashboard's Serve REST API and the head-proxy health checker."""

from controllers.ray.dashboard import (
    DashboardClient,
    DashboardClientFactory,
    DashboardClosed,
    DashboardError,
    DashboardHTTPError,
    DashboardInvalidResponse,
    DashboardResponseTooLarge,
    DashboardTimeout,
    DashboardUnreachable,
)
from controllers.ray.health import HeadProxyHealthChecker, HeadTarget, HealthResult
from controllers.ray.serve_status import AppStatus, DeploymentStatus, ServeDetails

__all__ = [
    "AppStatus",
    "DashboardClient",
    "DashboardClientFactory",
    "DashboardClosed",
    "DashboardError",
    "DashboardHTTPError",
    "DashboardInvalidResponse",
    "DashboardResponseTooLarge",
    "DashboardTimeout",
    "DashboardUnreachable",
    "DeploymentStatus",
    "HeadProxyHealthChecker",
    "HeadTarget",
    "HealthResult",
    "ServeDetails",
]
