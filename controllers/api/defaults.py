"""Defaults: the CRD's ``default:`` values plus KubeRay's in-controller defaulting.

An object read from the API server already has the CRD defaults (the server applies them on
every read and write). One loaded from a file or built in a test does not, and the builders
must behave the same for both, so ``with_defaults`` applies the very values the CRD generator
writes into the schema (both read the ``Schema({"default": ...})`` markers on the models, so
they cannot disagree), and then KubeRay's controller-side rule: a missing ``rayStartParams``
becomes ``{}`` (docs/reference/behaviour.md §2 row 3).

The input is never mutated; a new model is returned.
"""

from __future__ import annotations

import copy
import types
import typing
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from controllers.api.base import ApiModel, Schema
from controllers.api.raycluster import RayCluster, RayClusterSpec
from controllers.api.rayjob import RayCronJob, RayJob
from controllers.api.rayservice import RayService

__all__ = ["schema_default", "with_defaults"]

M = TypeVar("M", bound=ApiModel)

_MISSING = object()


def schema_default(annotation: Any) -> Any:
    """The ``default`` from a field annotation's Schema markers, or ``_MISSING``."""
    origin = get_origin(annotation)
    if origin is Annotated:
        base, *metadata = get_args(annotation)
        for item in metadata:
            if isinstance(item, Schema) and "default" in item.extra:
                return item.extra["default"]
        return schema_default(base)
    if origin in (Union, types.UnionType):
        for arg in get_args(annotation):
            if arg is not type(None):
                found = schema_default(arg)
                if found is not _MISSING:
                    return found
    return _MISSING


def _fill(model: ApiModel) -> None:
    hints = typing.get_type_hints(type(model), include_extras=True)
    for name in type(model).model_fields:
        value = getattr(model, name)
        if value is None:
            default = schema_default(hints.get(name))
            if default is not _MISSING:
                setattr(model, name, copy.deepcopy(default))
            continue
        if isinstance(value, ApiModel):
            _fill(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, ApiModel):
                    _fill(item)
        elif isinstance(value, dict):
            for item in value.values():
                if isinstance(item, ApiModel):
                    _fill(item)


def _ray_start_params(spec: RayClusterSpec | None) -> None:
    if spec is None:
        return
    if spec.head_group_spec is not None and spec.head_group_spec.ray_start_params is None:
        spec.head_group_spec.ray_start_params = {}
    for group in spec.worker_group_specs or []:
        if group.ray_start_params is None:
            group.ray_start_params = {}


def with_defaults(obj: M) -> M:
    """A copy of ``obj`` (any model: RayCluster, RayService, a spec...) with defaults applied."""
    out = obj.model_copy(deep=True)
    _fill(out)
    if isinstance(out, RayCluster):
        _ray_start_params(out.spec)
    elif isinstance(out, RayService):
        _ray_start_params(out.spec.ray_cluster_config if out.spec else None)
    elif isinstance(out, RayClusterSpec):
        _ray_start_params(out)
    elif isinstance(out, RayJob):
        _ray_start_params(out.spec.ray_cluster_spec if out.spec else None)
    elif isinstance(out, RayCronJob):
        template = out.spec.job_template if out.spec else None
        _ray_start_params(template.ray_cluster_spec if template else None)
    return out
