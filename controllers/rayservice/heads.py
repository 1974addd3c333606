"""Head Pods of a RayService's clusters: lookup, readiness, and what the health checker probes.

A missing head Pod is a normal state (the cluster is starting, suspended or being recreated), not
an error to retry in a loop (KubeRay #4686): every helper here returns None for it, and the
RayCluster or Pod watch wakes the RayService when a head appears.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from controllers import constants as c
from controllers.common.cache import CacheReader
from controllers.common.objects import is_deleting
from controllers.common.pods import live_pods
from controllers.constants import RAYCLUSTERS, RAYSERVICES
from controllers.ray.health import HeadTarget
from controllers.raycluster.common import find_container_port
from controllers.rayservice.shapes import cluster_names
from kuberay_py.client.resources import PODS

__all__ = [
    "auth_token_source",
    "dashboard_port",
    "head_pod",
    "head_target",
    "head_targets",
    "owning_rayservice",
    "ray_container",
    "serve_port",
]


def ray_container(pod: dict[str, Any]) -> dict[str, Any]:
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    container: dict[str, Any] = containers[c.RAY_CONTAINER_INDEX]
    return container


def head_pod(cache: CacheReader, namespace: str, cluster_name: str) -> dict[str, Any] | None:
    """The head Pod of a cluster (the newest non-terminating one if several exist), or None."""
    pods = cache.list(
        PODS,
        namespace,
        labels={c.RAY_CLUSTER_LABEL_KEY: cluster_name, c.RAY_NODE_TYPE_LABEL_KEY: c.NODE_TYPE_HEAD},
    )
    live = live_pods(pods)
    if not live:
        return None
    return max(live, key=lambda p: p["metadata"].get("creationTimestamp") or "")


def serve_port(pod: dict[str, Any]) -> int:
    """The head's own container port named ``serve`` (KubeRay's FindContainerPort, default 8000)."""
    return find_container_port(ray_container(pod), c.SERVING_PORT_NAME, c.DEFAULT_SERVING_PORT)


def dashboard_port(pod: dict[str, Any], cluster: dict[str, Any] | None = None) -> int:
    """The container port named ``dashboard``, else ``rayStartParams["dashboard-port"]``, else 8265."""
    default = c.DEFAULT_DASHBOARD_PORT
    params = (((cluster or {}).get("spec") or {}).get("headGroupSpec") or {}).get("rayStartParams") or {}
    try:
        default = int(params.get("dashboard-port", default))
    except (TypeError, ValueError):
        default = c.DEFAULT_DASHBOARD_PORT
    return find_container_port(ray_container(pod), c.DASHBOARD_PORT_NAME, default)


def head_target(pod: dict[str, Any], owner: str) -> HeadTarget | None:
    """What to probe for this head Pod; None until it has an IP and runs."""
    status = pod.get("status") or {}
    ip = status.get("podIP")
    if not ip or status.get("phase") != "Running" or is_deleting(pod):
        return None
    meta = pod["metadata"]
    return HeadTarget(
        namespace=meta["namespace"],
        pod_name=meta["name"],
        pod_uid=meta["uid"],
        ip=ip,
        port=serve_port(pod),
        owner=owner,
    )


def head_targets(cache: CacheReader) -> Iterator[HeadTarget]:
    """Heads of the active and pending clusters of every RayService that may serve from its head."""
    for svc in cache.list(RAYSERVICES):
        if (svc.get("spec") or {}).get("excludeHeadPodFromServeSvc") or svc["metadata"].get(
            "deletionTimestamp"
        ):
            continue
        namespace = svc["metadata"]["namespace"]
        owner = f"{namespace}/{svc['metadata']['name']}"
        for cluster_name in cluster_names(svc.get("status") or {}):
            pod = head_pod(cache, namespace, cluster_name)
            target = head_target(pod, owner) if pod is not None else None
            if target is not None:
                yield target


def owning_rayservice(cache: CacheReader, namespace: str, cluster_name: str) -> str | None:
    """The RayService that created a cluster (from the cluster's ``ray.io/originated-from-*`` labels)."""
    cluster = cache.get(RAYCLUSTERS, cluster_name, namespace)
    labels = ((cluster or {}).get("metadata") or {}).get("labels") or {}
    if labels.get(c.RAY_ORIGINATED_FROM_CRD_LABEL_KEY) != c.CRD_RAYSERVICE:
        return None
    name = labels.get(c.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY)
    return str(name) if name else None


def auth_token_source(pod: dict[str, Any]) -> tuple[str, str, str] | None:
    """Where the head's Ray token comes from when the Ray container runs with ``RAY_AUTH_MODE=token``.

    ``("value", token, "")`` for a literal ``RAY_AUTH_TOKEN``, ``("secret", name, key)`` for a
    ``secretKeyRef``; None when token auth is off. The dashboard then wants
    ``x-ray-authorization: Bearer <token>``.
    """
    env = {e.get("name"): e for e in ray_container(pod).get("env") or [] if isinstance(e, dict)}
    if str((env.get("RAY_AUTH_MODE") or {}).get("value", "")).lower() != "token":
        return None
    token = env.get("RAY_AUTH_TOKEN") or {}
    if token.get("value"):
        return ("value", str(token["value"]), "")
    ref = (token.get("valueFrom") or {}).get("secretKeyRef") or {}
    if ref.get("name") and ref.get("key"):
        return ("secret", str(ref["name"]), str(ref["key"]))
    return None
