"""Head Pods of a RayService's clusters: what the shared health checker probes, and whose they are.

Finding and reaching a head Pod is every controller's (:mod:`controllers.common.heads`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from controllers import constants as c
from controllers.common.cache import CacheReader
from controllers.common.heads import head_pod, serve_port
from controllers.common.objects import is_deleting
from controllers.constants import RAYCLUSTERS, RAYSERVICES
from controllers.ray.health import HeadTarget
from controllers.rayservice.shapes import cluster_names

__all__ = ["head_target", "head_targets", "owning_rayservice"]


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
