"""The metadata checks KubeRay's webhooks run, with KubeRay's wording.

KubeRay's webhooks call ``ValidateRay{Cluster,Job,Service}Metadata``, which stop at the first
problem and word it per kind (RayJob and RayService messages start with "The <Kind> metadata is
invalid: "). The webhook reports that one message at ``metadata.name`` whatever it is about --
the RayService timeout annotation included -- so these return one message or ``None``. The
wording itself lives with the controllers' validation, so a webhook and a reconcile agree.
"""

from __future__ import annotations

from collections.abc import Mapping

from controllers import constants as C
from controllers.api.names import object_name_problem
from controllers.api.validation import rayservice_annotations_problem

__all__ = [
    "raycluster_metadata_problem",
    "rayservice_metadata_problem",
]


def raycluster_metadata_problem(name: str) -> str | None:
    return object_name_problem("RayCluster", name, C.MAX_RAYCLUSTER_NAME_LENGTH)


def rayservice_metadata_problem(name: str, annotations: Mapping[str, str]) -> str | None:
    problem = object_name_problem("RayService", name, C.MAX_RAYSERVICE_NAME_LENGTH)
    if problem is None:
        problem = rayservice_annotations_problem(annotations)
    return None if problem is None else f"The RayService metadata is invalid: {problem}"
