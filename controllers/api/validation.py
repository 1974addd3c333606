"""Semantic validation of RayCluster and RayService: the rules an OpenAPI schema cannot express.

Pure functions: an object in, a list of ``FieldError`` out (empty = valid). Each error names the
field path the way the API server does (``spec.workerGroupSpecs[1].minReplicas``) and carries the
category KubeRay uses to pick its event reason (``metadata`` → ``InvalidRayClusterMetadata``,
``spec`` → ``InvalidRayClusterSpec``, ``status`` → ``InvalidRayClusterStatus``).

Unlike KubeRay, which stops at the first problem, every problem is reported: a user fixing a
manifest should not have to apply it once per mistake. The checks follow KubeRay's
``utils/validation.go`` (docs/reference/behaviour.md §2 row 4 and §3.1 step 4). KubeRay's alpha
feature gates (:class:`~controllers.api.gates.ClusterGates`) decide whether their fields may be
set at all, with KubeRay's messages when they may not.

A raw dict that does not even load into the models (``replicas: "3"``) is reported as field
errors too, so callers never see an exception from ``validate_*``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from controllers import constants as C
from controllers.api.errors import Category, FieldError
from controllers.api.gates import ClusterGates
from controllers.api.names import object_name_problem, parse_go_duration
from controllers.api.raycluster import RayCluster, RayClusterStatus
from controllers.api.rayservice import RayService, RayServiceSpec, ServeConfigError, parse_serve_config
from controllers.api.spec_validation import validate_raycluster_spec

__all__ = [
    "UPGRADE_INCREMENTAL",
    "FieldError",
    "errors_from_pydantic",
    "is_incremental_upgrade",
    "load_or_errors",
    "parse_initializing_timeout",
    "rayservice_annotations_problem",
    "validate_raycluster",
    "validate_raycluster_metadata",
    "validate_raycluster_spec",
    "validate_raycluster_status",
    "validate_rayservice",
    "validate_rayservice_metadata",
    "validate_rayservice_spec",
]


def _loc_to_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def errors_from_pydantic(exc: ValidationError) -> list[FieldError]:
    """Type errors from loading a raw dict, as field errors (pydantic already uses the aliases)."""
    out: list[FieldError] = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        path = _loc_to_path(loc) or "<root>"
        head = str(loc[0]) if loc else ""
        category: Category = "status" if head == "status" else "metadata" if head == "metadata" else "spec"
        msg = err["msg"]
        if err["type"] not in ("missing", "extra_forbidden"):
            got = repr(err["input"])
            msg += f" (got {got[:77] + '...' if len(got) > 80 else got})"
        out.append(FieldError(path, msg, category))
    return out


# ------------------------------------------------------------------------------------------ RayCluster


def _name_errors(metadata: dict[str, Any] | None, kind: str, max_len: int) -> list[FieldError]:
    name = str((metadata or {}).get("name") or "")
    errs: list[FieldError] = []
    if not name:
        # generateName objects are named by the API server; a missing name is only reportable here.
        if not (metadata or {}).get("generateName"):
            errs.append(FieldError("metadata.name", f"{kind} name is required", "metadata"))
        return errs
    problem = object_name_problem(kind, name, max_len)
    if problem is not None:
        errs.append(FieldError("metadata.name", problem, "metadata"))
    return errs


def validate_raycluster_metadata(cluster: RayCluster) -> list[FieldError]:
    return _name_errors(cluster.metadata, "RayCluster", C.MAX_RAYCLUSTER_NAME_LENGTH)


def validate_raycluster_status(status: RayClusterStatus | None) -> list[FieldError]:
    """Suspending and Suspended cannot both be true (KubeRay requeues after 2 s on this one)."""
    if status is None or not status.conditions:
        return []
    true_types = {c.type for c in status.conditions if c.status == "True"}
    if C.COND_RAYCLUSTER_SUSPENDING in true_types and C.COND_RAYCLUSTER_SUSPENDED in true_types:
        return [
            FieldError(
                "status.conditions",
                "invalid RayCluster State: RayClusterSuspending and RayClusterSuspended conditions "
                "should not be both true",
                "status",
            )
        ]
    return []


_Object = TypeVar("_Object", bound=BaseModel)


def load_or_errors(model: type[_Object], obj: _Object | dict[str, Any]) -> _Object | list[FieldError]:
    """The object as its model, or the type errors that kept a raw manifest from loading."""
    if not isinstance(obj, dict):
        return obj
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        return errors_from_pydantic(exc)


def validate_raycluster(
    obj: RayCluster | dict[str, Any], *, gates: ClusterGates = ClusterGates()
) -> list[FieldError]:
    """All problems with a RayCluster (metadata, spec and status); ``gates``: the alpha feature gates."""
    cluster = load_or_errors(RayCluster, obj)
    if isinstance(cluster, list):
        return cluster
    errs = validate_raycluster_metadata(cluster)
    if cluster.spec is None:
        errs.append(FieldError("spec", "spec is required"))
    else:
        errs += validate_raycluster_spec(
            cluster.spec,
            cluster.annotations,
            path="spec",
            labels=cluster.labels,
            owner_kind="RayCluster",
            gates=gates,
        )
    errs += validate_raycluster_status(cluster.status)
    return errs


# ------------------------------------------------------------------------------------------ RayService


_GO_INT = re.compile(r"[+-]?[0-9]+")  # what strconv.Atoi accepts


def parse_initializing_timeout(value: str) -> float:
    """Seconds in ``ray.io/initializing-timeout``: a Go duration (``"5m"``) or integer seconds.

    Raises ValueError with KubeRay's wording for anything else, or for a value that is not
    positive; the integer form is what Go's ``strconv.Atoi`` takes (no spaces, no underscores).
    """
    key = C.RAYSERVICE_INITIALIZING_TIMEOUT_ANNOTATION_KEY
    try:
        seconds = parse_go_duration(value)
    except ValueError:
        pass
    else:
        if seconds <= 0:
            raise ValueError(f"annotation {key} must be a positive duration, got: {value}")
        return seconds
    if not _GO_INT.fullmatch(value):
        raise ValueError(
            f"annotation {key} has invalid format: {value}. Expected Go duration format "
            "(e.g., '5m', '1h') or positive integer seconds"
        )
    if int(value) <= 0:
        raise ValueError(f"annotation {key} must be a positive integer (seconds), got: {value}")
    return float(int(value))


def rayservice_annotations_problem(annotations: Mapping[str, str]) -> str | None:
    """KubeRay's text for a bad ``ray.io/initializing-timeout``, or None."""
    value = annotations.get(C.RAYSERVICE_INITIALIZING_TIMEOUT_ANNOTATION_KEY)
    if not value:
        return None
    try:
        parse_initializing_timeout(value)
    except ValueError as exc:
        return f"RayService annotations is invalid: {exc}"
    return None


def validate_rayservice_metadata(service: RayService) -> list[FieldError]:
    errs = _name_errors(service.metadata, "RayService", C.MAX_RAYSERVICE_NAME_LENGTH)
    problem = rayservice_annotations_problem(service.annotations)
    if problem is not None:
        path = f"metadata.annotations[{C.RAYSERVICE_INITIALIZING_TIMEOUT_ANNOTATION_KEY}]"
        errs.append(FieldError(path, problem, "metadata"))
    return errs


_SERVICE_UPGRADE_TYPES = ("NewClusterWithIncrementalUpgrade", "NewCluster", "None")
UPGRADE_INCREMENTAL = "NewClusterWithIncrementalUpgrade"
_OPTIONS = "spec.upgradeStrategy.clusterUpgradeOptions"


def is_incremental_upgrade(spec: RayServiceSpec | None, *, gate: bool = True) -> bool:
    """KubeRay's IsIncrementalUpgradeEnabled: the gate is on and the type is exactly incremental."""
    strategy = spec.upgrade_strategy if spec is not None else None
    return gate and strategy is not None and strategy.type == UPGRADE_INCREMENTAL


def _incremental_errors(spec: RayServiceSpec) -> list[FieldError]:
    """KubeRay's rules 2-8 for incremental upgrade (VAL:718-746), with its messages."""
    errs: list[FieldError] = []
    cluster = spec.ray_cluster_config
    if cluster is not None and not cluster.enable_in_tree_autoscaling:
        errs.append(
            FieldError(
                "spec.rayClusterConfig.enableInTreeAutoscaling",
                "Ray Autoscaler is required for NewClusterWithIncrementalUpgrade",
            )
        )
    options = spec.upgrade_strategy.cluster_upgrade_options if spec.upgrade_strategy else None
    if options is None:
        errs.append(
            FieldError(_OPTIONS, "ClusterUpgradeOptions are required for NewClusterWithIncrementalUpgrade")
        )
        return errs
    surge = options.max_surge
    if not 0 <= surge <= 100:
        errs.append(FieldError(f"{_OPTIONS}.maxSurgePercent", "maxSurgePercent must be between 0 and 100"))
    step = options.step_size_percent
    if step is None or not 0 <= step <= 100:
        errs.append(FieldError(f"{_OPTIONS}.stepSizePercent", "stepSizePercent must be between 0 and 100"))
    elif step > surge:
        errs.append(
            FieldError(
                f"{_OPTIONS}.stepSizePercent", "stepSizePercent must be less than or equal to maxSurgePercent"
            )
        )
    if options.interval_seconds is None or options.interval_seconds <= 0:
        errs.append(FieldError(f"{_OPTIONS}.intervalSeconds", "intervalSeconds must be greater than 0"))
    if not options.gateway_class_name:
        errs.append(
            FieldError(
                f"{_OPTIONS}.gatewayClassName",
                "gatewayClassName is required for NewClusterWithIncrementalUpgrade",
            )
        )
    return errs


def validate_rayservice_spec(
    service: RayService, *, incremental_upgrade: bool = True, gates: ClusterGates = ClusterGates()
) -> list[FieldError]:
    """``incremental_upgrade`` is the RayServiceIncrementalUpgrade feature gate."""
    spec = service.spec
    if spec is None:
        return [FieldError("spec", "spec is required")]
    errs: list[FieldError] = []
    cluster = spec.ray_cluster_config
    if cluster is None:
        errs.append(FieldError("spec.rayClusterConfig", "rayClusterConfig is required"))
    else:
        if cluster.auth_options is not None and cluster.auth_options.enable_k8s_token_auth:
            errs.append(
                FieldError(
                    "spec.rayClusterConfig.authOptions.enableK8sTokenAuth",
                    "K8s token auth mode is currently not supported for RayService",
                )
            )
        errs += validate_raycluster_spec(
            cluster,
            service.annotations,
            path="spec.rayClusterConfig",
            labels={},
            owner_kind="RayService",
            gates=gates,
        )
        head_service = cluster.head_group_spec.head_service if cluster.head_group_spec else None
        head_service_name = ((head_service or {}).get("metadata") or {}).get("name")
        if head_service_name:
            errs.append(
                FieldError(
                    "spec.rayClusterConfig.headGroupSpec.headService.metadata.name",
                    "spec.rayClusterConfig.headGroupSpec.headService.metadata.name should not be set",
                )
            )
    strategy = spec.upgrade_strategy
    if strategy is not None and strategy.type is not None and strategy.type not in _SERVICE_UPGRADE_TYPES:
        errs.append(
            FieldError(
                "spec.upgradeStrategy.type",
                f"Spec.UpgradeStrategy.Type value {strategy.type} is invalid, valid options are "
                "NewClusterWithIncrementalUpgrade, NewCluster, or None",
            )
        )
    if is_incremental_upgrade(spec, gate=incremental_upgrade):
        errs += _incremental_errors(spec)
    delay = spec.ray_cluster_deletion_delay_seconds
    if delay is not None and delay < 0:
        errs.append(
            FieldError(
                "spec.rayClusterDeletionDelaySeconds",
                f"Spec.RayClusterDeletionDelaySeconds should be a non-negative integer, got {delay}",
            )
        )
    if spec.serve_config_v2 is not None:
        try:
            parse_serve_config(spec.serve_config_v2)
        except ServeConfigError as exc:
            errs.append(FieldError("spec.serveConfigV2", str(exc)))
    return errs


def validate_rayservice(
    obj: RayService | dict[str, Any],
    *,
    incremental_upgrade: bool = True,
    gates: ClusterGates = ClusterGates(),
) -> list[FieldError]:
    """All problems with a RayService (metadata and spec); ``incremental_upgrade`` is the
    RayServiceIncrementalUpgrade gate, ``gates`` the alpha gates of its ``rayClusterConfig``."""
    service = load_or_errors(RayService, obj)
    if isinstance(service, list):
        return service
    return validate_rayservice_metadata(service) + validate_rayservice_spec(
        service, incremental_upgrade=incremental_upgrade, gates=gates
    )
