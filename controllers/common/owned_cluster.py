"""The RayCluster a RayService or a RayJob creates: one body, owned by its creator.

Both controllers build the same object around a spec of their own choosing (KubeRay's
``constructRayClusterForRayService`` and ``constructRayClusterForRayJob``): a ``ray.io/v1``
RayCluster in the owner's namespace, with the owner as its controller, so garbage collection
removes it with the owner and the owner's ``owns()`` watch sees its changes.
"""

from __future__ import annotations

from typing import Any

from controllers import constants as C
from controllers.common.objects import new_child
from kuberay_py.objects import Obj

__all__ = ["owned_cluster"]


def owned_cluster(
    owner: Obj,
    owner_kind: str,
    name: str,
    *,
    labels: dict[str, str],
    annotations: dict[str, str],
    spec: dict[str, Any],
) -> dict[str, Any]:
    return new_child(
        C.RAYCLUSTERS, name, owner, labels=labels, annotations=annotations, owner_kind=owner_kind, spec=spec
    )
