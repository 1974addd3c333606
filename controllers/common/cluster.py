"""Small readers over a RayCluster dict, shared by every controller that owns or reads one.

The builders take the RayCluster as the raw dict the cache hands out (the typed models in
``controllers.api`` validate the same shape); these helpers give the few derived values
(names, ports, feature switches, the status fields that matter) one definition each, with
KubeRay's defaults. The RayCluster controller uses all of them; the RayService and RayJob
controllers the names, the owner reference and the significant status fields.
"""

from __future__ import annotations

from typing import Any

from controllers import constants as C
from controllers.common.objects import controller_ref, spec_of

__all__ = [
    "SIGNIFICANT_FIELDS",
    "check_label",
    "check_name",
    "controller_ref",
    "created_by_rayservice",
    "desired_replicas",
    "find_container_port",
    "fqdn_ray_ip",
    "gcs_ft_enabled",
    "gcs_ft_redis_backend",
    "group_suspended",
    "head_port",
    "head_service_name",
    "headless_service_name",
    "is_autoscaler_v2",
    "is_autoscaling",
    "num_of_hosts",
    "pod_generate_name",
    "serve_proxy_on_workers",
    "serve_service_name",
    "spec_of",
]


# The fields KubeRay's InconsistentRayClusterStatus compares: what a user reads of a cluster's
# state, and what a RayJob mirrors into its own status.rayClusterStatus.
SIGNIFICANT_FIELDS = (
    "state",
    "reason",
    "readyWorkerReplicas",
    "availableWorkerReplicas",
    "desiredWorkerReplicas",
    "minWorkerReplicas",
    "maxWorkerReplicas",
    "endpoints",
    "head",
    "conditions",
)


def check_name(name: str) -> str:
    """KubeRay's ``CheckName``: keep a generated name a valid DNS-1035 label (≤ 63, letter first)."""
    if len(name) > 63:
        name = name[len(name) - 63 :]
    if name and name[0].isdigit():
        name = "r" + name[1:]
    return name


def check_label(value: str) -> str:
    """KubeRay's ``CheckLabel`` (and ``TrimJobName``): the last 63 characters, not starting with
    punctuation."""
    value = value[-63:]
    if value and not value[0].isalnum():
        value = "r" + value[1:]
    return value


def head_service_name(cluster: dict[str, Any]) -> str:
    custom = (
        ((spec_of(cluster).get("headGroupSpec") or {}).get("headService") or {}).get("metadata") or {}
    ).get("name")
    if custom:
        return str(custom)
    return check_name(f"{cluster['metadata']['name']}-{C.HEAD_SERVICE_SUFFIX}")


def serve_service_name(name: str) -> str:
    return check_name(f"{name}-{C.SERVE_SERVICE_SUFFIX}")


def headless_service_name(cluster: dict[str, Any]) -> str:
    return check_name(f"{cluster['metadata']['name']}-{C.HEADLESS_SERVICE_SUFFIX}")


def fqdn_ray_ip(cluster: dict[str, Any], cluster_domain: str) -> str:
    return f"{head_service_name(cluster)}.{cluster['metadata']['namespace']}.svc.{cluster_domain}"


def head_port(cluster: dict[str, Any]) -> str:
    params = (spec_of(cluster).get("headGroupSpec") or {}).get("rayStartParams") or {}
    return str(params.get("port") or C.DEFAULT_GCS_SERVER_PORT)


def pod_generate_name(prefix: str, node_type: str) -> str:
    """``<prefix[:50]>-head-`` / ``-worker-``: room for the API server's 5 random characters."""
    return f"{prefix[:50]}-{node_type}-".lower()


def created_by_rayservice(cluster: dict[str, Any]) -> bool:
    labels = cluster.get("metadata", {}).get("labels") or {}
    return labels.get(C.RAY_ORIGINATED_FROM_CRD_LABEL_KEY) == C.CRD_RAYSERVICE


def creator_crd(cluster: dict[str, Any]) -> str:
    labels = cluster.get("metadata", {}).get("labels") or {}
    return str(labels.get(C.RAY_ORIGINATED_FROM_CRD_LABEL_KEY) or C.CRD_RAYCLUSTER)


def serve_proxy_on_workers(cluster: dict[str, Any]) -> bool:
    """False when the RayService's serve config keeps proxies off workers (KubeRay #4994).

    The RayService controller copies ``proxy_location`` from ``serveConfigV2`` into the
    ``ray.io/serve-proxy-location`` annotation of the RayCluster it builds.
    """
    annotations = cluster.get("metadata", {}).get("annotations") or {}
    location = str(annotations.get(C.SERVE_PROXY_LOCATION_ANNOTATION_KEY, "")).strip()
    return location not in C.PROXY_LOCATIONS_WITHOUT_WORKER_PROXY


def is_autoscaling(cluster: dict[str, Any]) -> bool:
    return bool(spec_of(cluster).get("enableInTreeAutoscaling"))


def is_autoscaler_v2(cluster: dict[str, Any]) -> bool:
    """Autoscaling with ``autoscalerOptions.version: v2`` (KubeRay builds Pods on the version alone)."""
    options = spec_of(cluster).get("autoscalerOptions") or {}
    return is_autoscaling(cluster) and options.get("version") == "v2"


def gcs_ft_enabled(cluster: dict[str, Any]) -> bool:
    annotations = cluster.get("metadata", {}).get("annotations") or {}
    if spec_of(cluster).get("gcsFaultToleranceOptions") is not None:
        return True
    return str(annotations.get(C.RAY_FT_ENABLED_ANNOTATION_KEY, "")).lower() == "true"


def gcs_ft_redis_backend(cluster: dict[str, Any]) -> bool:
    """GCS FT with an external Redis (the only backend whose data needs a cleanup Job)."""
    if not gcs_ft_enabled(cluster):
        return False
    options = spec_of(cluster).get("gcsFaultToleranceOptions") or {}
    return options.get("backend", "redis") in ("", "redis")


def num_of_hosts(group: dict[str, Any]) -> int:
    return max(1, int(group.get("numOfHosts") or 1))


def group_suspended(cluster: dict[str, Any], group: dict[str, Any]) -> bool:
    return bool(group.get("suspend"))


def desired_replicas(group: dict[str, Any]) -> int:
    """Replica *groups* KubeRay wants: clamp(replicas, min, max); replicas defaults to min."""
    min_r = int(group.get("minReplicas") or 0)
    max_r = group.get("maxReplicas")
    replicas = group.get("replicas")
    r = min_r if replicas is None else int(replicas)
    if max_r is not None and r > int(max_r):
        r = int(max_r)
    if r < min_r:
        r = min_r
    return max(0, r)


def find_container_port(container: dict[str, Any], name: str, default: int) -> int:
    for port in container.get("ports") or []:
        if port.get("name") == name:
            return int(port.get("containerPort", default))
    return default
