"""The ray.io/v1 API: RayCluster and RayService models, defaults, validation and the CRD generator.

Load with ``load_raycluster(obj)`` / ``load_rayservice(obj)``, dump with ``.to_dict()``;
``dump(load(x)) == x`` for every valid manifest, unknown fields included.
"""

from controllers.api.base import ApiModel
from controllers.api.raycluster import (
    GROUP,
    VERSION,
    AuthOptions,
    AutoscalerOptions,
    Condition,
    GcsFaultToleranceOptions,
    HeadGroupSpec,
    HeadInfo,
    RayCluster,
    RayClusterSpec,
    RayClusterStatus,
    RayClusterUpgradeStrategy,
    RedisCredential,
    ScaleStrategy,
    WorkerGroupSpec,
    load_raycluster,
)
from controllers.api.rayservice import (
    AppStatus,
    RayService,
    RayServiceSpec,
    RayServiceStatus,
    RayServiceStatuses,
    RayServiceUpgradeStrategy,
    ServeConfigError,
    ServeDeploymentStatus,
    load_rayservice,
    parse_serve_config,
)

__all__ = [
    "GROUP",
    "VERSION",
    "ApiModel",
    "AppStatus",
    "AuthOptions",
    "AutoscalerOptions",
    "Condition",
    "GcsFaultToleranceOptions",
    "HeadGroupSpec",
    "HeadInfo",
    "RayCluster",
    "RayClusterSpec",
    "RayClusterStatus",
    "RayClusterUpgradeStrategy",
    "RayService",
    "RayServiceSpec",
    "RayServiceStatus",
    "RayServiceStatuses",
    "RayServiceUpgradeStrategy",
    "RedisCredential",
    "ScaleStrategy",
    "ServeConfigError",
    "ServeDeploymentStatus",
    "WorkerGroupSpec",
    "load_raycluster",
    "load_rayservice",
    "parse_serve_config",
]
