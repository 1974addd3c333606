"""ray.io/v1 RayService: spec and status, field for field with KubeRay's CRD.

``serveConfigV2`` stays the YAML string the user wrote (the controller hashes and submits it as
written); ``RayServiceSpec.serve_applications()`` parses it when a caller needs the structure.
``rayClusterStatus`` inside the service statuses is the full RayCluster status model, so the
controller copies it without converting.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import yaml
from pydantic import Field

from controllers.api.base import ApiModel, ApiObject, DateTime, Int32, Int64, K8s, Schema
from controllers.api.raycluster import MANAGED_BY_RULES, ConditionList, RayClusterSpec, RayClusterStatus

__all__ = [
    "KIND",
    "AppStatus",
    "ClusterUpgradeOptions",
    "RayService",
    "RayServiceSpec",
    "RayServiceStatus",
    "RayServiceStatuses",
    "RayServiceUpgradeStrategy",
    "ServeConfigError",
    "ServeDeploymentStatus",
    "load_rayservice",
    "parse_serve_config",
]

KIND = "RayService"

ServiceManifest = Annotated[dict[str, Any], K8s("V1Service")]
# libyaml when available: the pure-Python loader takes milliseconds per serve config.
_YAML_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ServeConfigError(ValueError):
    """serveConfigV2 is not YAML, or has no ``applications`` list."""


def parse_serve_config(text: str) -> dict[str, Any]:
    """Parse serveConfigV2 the way Ray's dashboard will receive it (YAML → JSON object).

    Raises ServeConfigError with a message that names ``serveConfigV2``.
    """
    try:
        doc = yaml.load(text, Loader=_YAML_LOADER)
    except yaml.YAMLError as exc:
        raise ServeConfigError(f"serveConfigV2 is not valid YAML: {exc}") from exc
    if not isinstance(doc, dict):
        raise ServeConfigError("serveConfigV2 must be a YAML mapping with an 'applications' list")
    apps = doc.get("applications")
    if not isinstance(apps, list):
        raise ServeConfigError("serveConfigV2.applications must be a list")
    return doc


class ClusterUpgradeOptions(ApiModel):
    """How ``NewClusterWithIncrementalUpgrade`` moves capacity and traffic (KubeRay's names).

    The CRD carries no ranges (as KubeRay's); the controller's validation enforces them, with
    KubeRay's messages, so a bad value is a ``ValidationFailed`` condition rather than a silent
    stall.
    """

    crd_required: ClassVar[tuple[str, ...]] = ("gatewayClassName", "intervalSeconds", "stepSizePercent")

    max_surge_percent: Annotated[int, Schema({"format": "int32", "default": 100})] | None = Field(
        default=None, description="target_capacity change per capacity step, in percent (default 100)."
    )
    step_size_percent: Int32 | None = Field(
        default=None, description="HTTPRoute weight change per traffic step, in percent."
    )
    interval_seconds: Int32 | None = Field(default=None, description="Minimum seconds between traffic steps.")
    gateway_class_name: str | None = Field(
        default=None, description="GatewayClass of the Gateway the operator creates for the RayService."
    )

    @property
    def max_surge(self) -> int:
        """``maxSurgePercent`` with the CRD default applied (KubeRay dereferences it as 100)."""
        return 100 if self.max_surge_percent is None else self.max_surge_percent


class RayServiceUpgradeStrategy(ApiModel):
    type: str | None = Field(
        default=None, description="NewCluster (default), NewClusterWithIncrementalUpgrade or None."
    )
    cluster_upgrade_options: ClusterUpgradeOptions | None = None


class RayServiceSpec(ApiModel):
    """The desired state of a RayService. Only ``rayClusterConfig`` is required."""

    crd_required: ClassVar[tuple[str, ...]] = ("rayClusterConfig",)

    ray_cluster_deletion_delay_seconds: Annotated[int, Schema({"format": "int32", "minimum": 0})] | None = (
        Field(
            default=None,
            description="Seconds to keep an old RayCluster after traffic moved away (default 60).",
        )
    )
    service_unhealthy_second_threshold: Int32 | None = Field(default=None, description="Deprecated; ignored.")
    deployment_unhealthy_second_threshold: Int32 | None = Field(
        default=None, description="Deprecated; ignored."
    )
    serve_service: ServiceManifest | None = Field(
        default=None, description="A template for the serve Service."
    )
    managed_by: Annotated[str, MANAGED_BY_RULES] | None = Field(
        default=None, description="The controller that reconciles this service; immutable."
    )
    upgrade_strategy: RayServiceUpgradeStrategy | None = Field(
        default=None, description="How a changed rayClusterConfig is rolled out."
    )
    serve_config_v2: str | None = Field(
        default=None, description="The Ray Serve multi-application config (YAML)."
    )
    ray_cluster_config: RayClusterSpec | None = Field(
        default=None, description="The RayCluster spec the service runs on."
    )
    exclude_head_pod_from_serve_svc: bool | None = Field(
        default=None, description="Never route serve traffic to the head Pod."
    )
    suspend: bool | None = Field(default=None, description="Delete the clusters and Services while true.")

    def serve_applications(self) -> list[dict[str, Any]]:
        """The parsed ``applications`` list (empty when serveConfigV2 is unset)."""
        if not self.serve_config_v2:
            return []
        apps: list[dict[str, Any]] = parse_serve_config(self.serve_config_v2)["applications"]
        return apps


class ServeDeploymentStatus(ApiModel):
    status: str | None = None
    message: str | None = None


class AppStatus(ApiModel):
    serve_deployment_statuses: dict[str, ServeDeploymentStatus] | None = None
    status: str | None = None
    message: str | None = None


class RayServiceStatus(ApiModel):
    """The status of one of the two clusters (active or pending) a RayService tracks."""

    last_traffic_migrated_time: DateTime | None = None
    target_capacity: Int32 | None = None
    traffic_routed_percent: Int32 | None = None
    application_statuses: dict[str, AppStatus] | None = Field(
        default=None, description="Serve application name to its status and deployments."
    )
    ray_cluster_name: str | None = Field(default=None, description="Name of the RayCluster.")
    ray_cluster_status: RayClusterStatus | None = None


class RayServiceStatuses(ApiModel):
    """The observed state of a RayService (the CRD's ``status``)."""

    last_update_time: DateTime | None = None
    service_status: str | None = Field(default=None, description="Deprecated: Running iff Ready, else empty.")
    conditions: ConditionList | None = Field(
        default=None, description="Ready, UpgradeInProgress, Suspending, Suspended, ..."
    )
    active_service_status: RayServiceStatus | None = Field(
        default=None, description="The cluster serving traffic."
    )
    pending_service_status: RayServiceStatus | None = Field(
        default=None, description="The cluster being prepared to take over."
    )
    num_serve_endpoints: Int32 | None = Field(
        default=None, description="Pods behind the serve Service that are ready to serve."
    )
    observed_generation: Int64 | None = None


class RayService(ApiObject):
    """A whole RayService object. ``metadata`` stays a plain dict (the API server owns it)."""

    spec: RayServiceSpec | None = None
    status: RayServiceStatuses | None = None


def load_rayservice(obj: dict[str, Any]) -> RayService:
    """Load a RayService manifest. Raises ``pydantic.ValidationError`` naming the bad field."""
    return RayService.model_validate(obj)
