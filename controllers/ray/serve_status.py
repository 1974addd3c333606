"""Typed views of what Ray Serve's REST API reports, parsed leniently.

Ray 2.60's ``GET /api/serve/applications/`` document carries far more than the operator reads
(controller info, proxies, full deployment configs, replicas). Only the application and deployment
status/message pairs feed the RayService status, so only those are parsed; everything else is
ignored so that newer Ray versions adding fields never break the operator. A field of the wrong
type is a :class:`ValueError` naming the path, which the dashboard client turns into a typed error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["APP_RUNNING", "AppStatus", "DeploymentStatus", "ServeDetails", "parse_serve_details"]

APP_RUNNING = "RUNNING"


@dataclass(frozen=True)
class DeploymentStatus:
    status: str
    message: str = ""


@dataclass(frozen=True)
class AppStatus:
    status: str
    message: str = ""
    deployments: dict[str, DeploymentStatus] = field(default_factory=dict)


@dataclass(frozen=True)
class ServeDetails:
    applications: dict[str, AppStatus]
    proxy_location: str | None = None
    http_port: int | None = None
    target_capacity: float | None = None
    # Each application's ``deployed_app_config``: the entry exactly as last PUT (Ray echoes it).
    deployed_configs: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def all_running(self) -> bool:
        """KubeRay's ``isReady``: at least one application and every one of them RUNNING."""
        return bool(self.applications) and all(a.status == APP_RUNNING for a in self.applications.values())


def _str(value: Any, path: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValueError(f"{path}: expected a string, got {type(value).__name__}")
    return value


def _mapping(value: Any, path: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{path}: expected an object, got {type(value).__name__}")
    return value


def parse_serve_details(doc: Any) -> ServeDetails:
    """Parse the body of ``GET /api/serve/applications/`` (Ray's ``ServeInstanceDetails``)."""
    root = _mapping(doc, "$")
    apps: dict[str, AppStatus] = {}
    deployed: dict[str, dict[str, Any]] = {}
    for app_name, raw_app in _mapping(root.get("applications"), "$.applications").items():
        app_path = f"$.applications[{app_name!r}]"
        app = _mapping(raw_app, app_path)
        if isinstance(app.get("deployed_app_config"), dict):
            deployed[app_name] = app["deployed_app_config"]
        deployments: dict[str, DeploymentStatus] = {}
        for dep_name, raw_dep in _mapping(app.get("deployments"), f"{app_path}.deployments").items():
            dep_path = f"{app_path}.deployments[{dep_name!r}]"
            dep = _mapping(raw_dep, dep_path)
            deployments[dep_name] = DeploymentStatus(
                status=_str(dep.get("status"), f"{dep_path}.status"),
                message=_str(dep.get("message"), f"{dep_path}.message"),
            )
        apps[app_name] = AppStatus(
            status=_str(app.get("status"), f"{app_path}.status"),
            message=_str(app.get("message"), f"{app_path}.message"),
            deployments=deployments,
        )
    http_port: int | None = None
    http_options = root.get("http_options")
    if isinstance(http_options, dict) and isinstance(http_options.get("port"), int):
        http_port = http_options["port"]
    proxy_location = root.get("proxy_location")
    capacity = root.get("target_capacity")
    return ServeDetails(
        applications=apps,
        proxy_location=proxy_location if isinstance(proxy_location, str) else None,
        http_port=http_port,
        target_capacity=float(capacity) if isinstance(capacity, int | float) else None,
        deployed_configs=deployed,
    )
