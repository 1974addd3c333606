"""The RayCluster a RayService owns: its name, labels, annotations and spec (pure builders).

The child cluster carries everything the upgrade rules need to be re-derived from the API alone
after an operator restart: the spec hash and the worker-group count (annotations), the
originating RayService (labels) and an owner reference for garbage collection and ``owns()``.
"""

from __future__ import annotations

from typing import Any

from controllers import constants as c
from controllers.api.rayservice import ServeConfigError, parse_serve_config
from controllers.common.owned_cluster import owned_cluster
from controllers.rayservice.hashing import spec_hash
from controllers.spechash import RAYCLUSTER_SPEC_TYPE, go_round_trip

__all__ = [
    "DELETION_DEADLINE_ANNOTATION_KEY",
    "build_ray_cluster",
    "cluster_spec_of",
    "owned_cluster_labels",
    "proxy_location",
    "with_go_struct_values",
]

# kuberay-py only: when a dangling cluster of a RayService may be deleted (RFC 3339, UTC). Kept on
# the RayCluster itself so the deadline survives an operator restart (KubeRay keeps it in memory).
DELETION_DEADLINE_ANNOTATION_KEY = "ray.io/rayservice-deletion-deadline"


def cluster_spec_of(rayservice: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = (rayservice.get("spec") or {}).get("rayClusterConfig") or {}
    return spec


def owned_cluster_labels(rayservice: dict[str, Any]) -> dict[str, str]:
    """The labels that associate a RayCluster with its RayService (used to list them)."""
    return {
        c.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY: rayservice["metadata"]["name"],
        c.RAY_ORIGINATED_FROM_CRD_LABEL_KEY: c.CRD_RAYSERVICE,
    }


def proxy_location(rayservice: dict[str, Any]) -> str | None:
    """``proxy_location`` from serveConfigV2, if the config parses and sets it."""
    text = (rayservice.get("spec") or {}).get("serveConfigV2")
    if not text:
        return None
    try:
        value = parse_serve_config(text).get("proxy_location")
    except ServeConfigError:
        return None
    return value if isinstance(value, str) else None


def build_ray_cluster(rayservice: dict[str, Any], name: str) -> dict[str, Any]:
    """The goal RayCluster for ``rayservice`` under ``name`` (KubeRay's constructRayClusterForRayService)."""
    meta = rayservice["metadata"]
    cluster_spec = cluster_spec_of(rayservice)
    labels = dict(meta.get("labels") or {})
    labels.update(owned_cluster_labels(rayservice))
    annotations = dict(meta.get("annotations") or {})
    annotations[c.HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_KEY] = spec_hash(cluster_spec)
    annotations[c.NUM_WORKER_GROUPS_KEY] = str(len(cluster_spec.get("workerGroupSpecs") or []))
    annotations[c.KUBERAY_VERSION_KEY] = c.KUBERAY_VERSION
    location = proxy_location(rayservice)
    if location:
        annotations[c.SERVE_PROXY_LOCATION_ANNOTATION_KEY] = location
    return owned_cluster(
        rayservice,
        c.CRD_RAYSERVICE,
        name,
        labels=labels,
        annotations=annotations,
        spec=with_go_struct_values(cluster_spec),
    )


def with_go_struct_values(cluster_spec: dict[str, Any]) -> dict[str, Any]:
    """The spec as KubeRay's Go client sends it (:func:`controllers.spechash.go_round_trip`).

    KubeRay writes the RayCluster from a Go struct, so every pod template has ``metadata: {}``,
    every container ``resources: {}``, every worker group ``scaleStrategy: {}``, and quantities are
    canonical. Writing the same keeps the stored child spec equal to KubeRay's, so neither operator
    sees a spec change after a takeover.
    """
    return go_round_trip(cluster_spec, RAYCLUSTER_SPEC_TYPE)
