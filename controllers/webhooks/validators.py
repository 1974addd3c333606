"""KubeRay's three validating webhooks: what each checks on create and update.

KubeRay v1.7.0 checks less in its webhooks than its controllers do: the name (and, for a
RayService, the initializing-timeout annotation) of all three kinds, plus unique worker group
names for a RayCluster. Updates run the same checks on the new object; deletes are always
allowed. A failure is a ``422 Invalid`` naming the object, so through kube-apiserver the user
reads ``admission webhook "vraycluster.kb.io" denied the request: RayCluster.ray.io "x" is
invalid: metadata.name: Invalid value: "x": ...``.
"""

from __future__ import annotations

from typing import Any

from controllers.api.job_validation import rayjob_name_problem
from kuberay_py.webhook import InvalidField, Validator, invalid

from .metadata import raycluster_metadata_problem, rayservice_metadata_problem

__all__ = ["RAYCLUSTER", "RAYJOB", "RAYSERVICE"]

GROUP = "ray.io"


def _meta(obj: dict[str, Any]) -> tuple[str, dict[str, str]]:
    meta = obj.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    return str(meta.get("name") or ""), {str(k): str(v) for k, v in annotations.items()}


def _worker_group_problem(obj: dict[str, Any]) -> InvalidField | None:
    """The first worker group whose name an earlier group already has."""
    seen: set[str] = set()
    groups = (obj.get("spec") or {}).get("workerGroupSpecs") or []
    for index, group in enumerate(groups):
        name = str((group or {}).get("groupName") or "")
        if name in seen:
            return InvalidField(f"spec.workerGroupSpecs[{index}]", group, "worker group names must be unique")
        seen.add(name)
    return None


def _raise_if_any(kind: str, name: str, errors: list[InvalidField]) -> list[str]:
    if errors:
        raise invalid(GROUP, kind, name, errors)
    return []


def _check_raycluster(obj: dict[str, Any]) -> list[str]:
    name, _ = _meta(obj)
    errors: list[InvalidField] = []
    problem = raycluster_metadata_problem(name)
    if problem is not None:
        errors.append(InvalidField("metadata.name", name, problem))
    duplicate = _worker_group_problem(obj)
    if duplicate is not None:
        errors.append(duplicate)
    return _raise_if_any("RayCluster", name, errors)


def _check_rayjob(obj: dict[str, Any]) -> list[str]:
    name, _ = _meta(obj)
    problem = rayjob_name_problem(name)
    errors = [] if problem is None else [InvalidField("metadata.name", name, problem)]
    return _raise_if_any("RayJob", name, errors)


def _check_rayservice(obj: dict[str, Any]) -> list[str]:
    name, annotations = _meta(obj)
    problem = rayservice_metadata_problem(name, annotations)
    errors = [] if problem is None else [InvalidField("metadata.name", name, problem)]
    return _raise_if_any("RayService", name, errors)


RAYCLUSTER = Validator(GROUP, "RayCluster", _check_raycluster, lambda _old, new: _check_raycluster(new))
RAYJOB = Validator(GROUP, "RayJob", _check_rayjob, lambda _old, new: _check_rayjob(new))
RAYSERVICE = Validator(GROUP, "RayService", _check_rayservice, lambda _old, new: _check_rayservice(new))
