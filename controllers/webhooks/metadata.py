"""The metadata checks KubeRay's webhooks run, with KubeRay's wording.

KubeRay's webhooks call ``ValidateRay{Cluster,Job,Service}Metadata``, which stop at the first
problem and word it per kind (RayJob and RayService messages start with "The <Kind> metadata is
invalid: "). The webhook reports that one message at ``metadata.name`` whatever it is about --
the RayService timeout annotation included -- so these return one message or ``None``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from controllers import constants as C
from controllers.api.job_validation import MAX_RAYJOB_NAME_LENGTH
from controllers.api.names import object_name_problem, parse_go_duration

__all__ = [
    "initializing_timeout_problem",
    "raycluster_metadata_problem",
    "rayjob_metadata_problem",
    "rayservice_metadata_problem",
]

_GO_INT = re.compile(r"[+-]?[0-9]+")  # what strconv.Atoi accepts (no spaces, no underscores)


def initializing_timeout_problem(annotations: Mapping[str, str]) -> str | None:
    """``ray.io/initializing-timeout``: a positive Go duration or a positive number of seconds."""
    key = C.RAYSERVICE_INITIALIZING_TIMEOUT_ANNOTATION_KEY
    value = annotations.get(key, "")
    if not value:
        return None
    try:
        seconds = parse_go_duration(value)
    except ValueError:
        pass
    else:
        return None if seconds > 0 else f"annotation {key} must be a positive duration, got: {value}"
    if not _GO_INT.fullmatch(value):
        return (
            f"annotation {key} has invalid format: {value}. Expected Go duration format "
            "(e.g., '5m', '1h') or positive integer seconds"
        )
    return None if int(value) > 0 else f"annotation {key} must be a positive integer (seconds), got: {value}"


def raycluster_metadata_problem(name: str) -> str | None:
    return object_name_problem("RayCluster", name, C.MAX_RAYCLUSTER_NAME_LENGTH)


def rayjob_metadata_problem(name: str) -> str | None:
    problem = object_name_problem("RayJob", name, MAX_RAYJOB_NAME_LENGTH)
    return None if problem is None else f"The RayJob metadata is invalid: {problem}"


def rayservice_metadata_problem(name: str, annotations: Mapping[str, str]) -> str | None:
    problem = object_name_problem("RayService", name, C.MAX_RAYSERVICE_NAME_LENGTH)
    if problem is None:
        timeout = initializing_timeout_problem(annotations)
        problem = None if timeout is None else f"RayService annotations is invalid: {timeout}"
    return None if problem is None else f"The RayService metadata is invalid: {problem}"
