"""Generate the RayCluster, RayService, RayJob and RayCronJob CRDs from the models.

``python -m controllers.api.crdgen [--out DIR]`` writes ``ray.io_rayclusters.yaml``,
``ray.io_rayservices.yaml``, ``ray.io_rayjobs.yaml`` and ``ray.io_raycronjobs.yaml`` (default
``config/crd/bases``); ``--check`` exits 1 when the files
in DIR differ from what the models produce. ``generate_crds()`` / ``write_crds(out_dir)`` are
the library entry points the CLI (``kuberay-operator crds``) calls.

Our own types (``controllers.api.raycluster`` / ``rayservice``) are translated field by field:
the alias is the property name, ``X | None`` is an optional property, ``Literal`` is an enum,
``Schema`` markers add format/default/CEL/list-type keywords and ``crd_required`` lists the
required properties. A field marked ``K8s("V1...")`` is expanded by ``K8sSchemaBuilder`` from
kubernetes_asyncio's models, so the Pod template is validated by the real core/v1 schema.

The result is a structural schema (every node typed, no ``additionalProperties`` beside
``properties``), served as ``ray.io/v1`` with the status subresource and KubeRay's printer
columns, categories and names. See docs/api.md for what differs from KubeRay's CRDs.
"""

from __future__ import annotations

import argparse
import sys
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml

from controllers.api.base import ApiModel, K8s, Schema
from controllers.api.k8s_schema import INT_OR_STRING, K8sSchemaBuilder
from controllers.api.raycluster import GROUP, VERSION, RayCluster
from controllers.api.rayjob import RayCronJob, RayJob
from controllers.api.rayservice import RayService

__all__ = ["CRD_FILES", "crd_to_yaml", "generate_crds", "main", "model_schema", "write_crds"]

CRD_FILES = (
    "ray.io_rayclusters.yaml",
    "ray.io_rayservices.yaml",
    "ray.io_rayjobs.yaml",
    "ray.io_raycronjobs.yaml",
)
GENERATOR_ANNOTATION = "kuberay-py.ray.io/generated-by"
GENERATOR_COMMAND = "python -m controllers.api.crdgen"

OnK8s = Callable[[str, tuple[str, ...]], None]


def _unwrap(annotation: Any) -> tuple[Any, list[Any]]:
    """Strip ``| None`` and ``Annotated``; return the bare type and the collected markers."""
    markers: list[Any] = []
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            base, *meta = get_args(annotation)
            markers.extend(meta)
            annotation = base
        elif origin in (Union, types.UnionType):
            args = [a for a in get_args(annotation) if a is not type(None)]
            if len(args) == 1:
                annotation = args[0]
            else:
                return annotation, markers
        else:
            return annotation, markers


class _Translator:
    def __init__(self, k8s: K8sSchemaBuilder, on_k8s: OnK8s | None) -> None:
        self.k8s = k8s
        self.on_k8s = on_k8s

    def type_schema(self, annotation: Any, path: tuple[str, ...]) -> dict[str, Any]:
        base, markers = _unwrap(annotation)
        extra: dict[str, Any] = {}
        for marker in markers:
            if isinstance(marker, Schema):
                extra.update(marker.extra)
        k8s = next((m for m in markers if isinstance(m, K8s)), None)
        if k8s is not None:
            if self.on_k8s is not None:
                self.on_k8s(k8s.model, path)
            node = self.k8s.model_schema(k8s.model)
        else:
            node = self._base_schema(base, path)
        if extra.get("x-kubernetes-int-or-string"):
            node = {k: v for k, v in node.items() if k != "type"} | INT_OR_STRING
        return {**node, **extra}

    def _base_schema(self, base: Any, path: tuple[str, ...]) -> dict[str, Any]:
        origin = get_origin(base)
        if isinstance(base, type) and issubclass(base, ApiModel):
            return self.model_schema(base, path)
        if base is str:
            return {"type": "string"}
        if base is bool:
            return {"type": "boolean"}
        if base is int:
            return {"type": "integer"}
        if base is float:
            return {"type": "number"}
        if origin is Literal:
            return {"enum": list(get_args(base)), "type": "string"}
        if origin in (Union, types.UnionType) and set(get_args(base)) == {int, str}:
            return dict(INT_OR_STRING)
        if origin is list:
            (item,) = get_args(base)
            return {"items": self.type_schema(item, (*path, "[]")), "type": "array"}
        if origin is dict:
            _, value = get_args(base)
            if value is Any:
                return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            return {"additionalProperties": self.type_schema(value, (*path, "{}")), "type": "object"}
        raise TypeError(f"no OpenAPI mapping for {base!r} at {'.'.join(path)}")

    def model_schema(self, cls: type[ApiModel], path: tuple[str, ...]) -> dict[str, Any]:
        hints = typing.get_type_hints(cls, include_extras=True)
        props: dict[str, Any] = {}
        for name, info in cls.model_fields.items():
            alias = info.alias or name
            node = self.type_schema(hints[name], (*path, alias))
            if info.description:
                node = {"description": info.description, **node}
            props[alias] = node
        schema: dict[str, Any] = {"properties": dict(sorted(props.items()))}
        if cls.crd_required:
            schema["required"] = sorted(cls.crd_required)
        schema["type"] = "object"
        return schema


def _root_schema(kind: str, spec_schema: dict[str, Any], status_schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "description": f"{kind} is the Schema for the {kind.lower()}s API",
        "properties": {
            "apiVersion": {
                "description": "APIVersion defines the versioned schema of this representation of an object.",
                "type": "string",
            },
            "kind": {
                "description": "Kind is the REST resource this object represents.",
                "type": "string",
            },
            "metadata": {"type": "object"},
            "spec": spec_schema,
            "status": status_schema,
        },
        "type": "object",
    }


def model_schema(
    cls: type[ApiModel], *, k8s: K8sSchemaBuilder | None = None, on_k8s: OnK8s | None = None
) -> dict[str, Any]:
    """The openAPIV3Schema for a whole object model (RayCluster or RayService)."""
    translator = _Translator(k8s or K8sSchemaBuilder(), on_k8s)
    hints = typing.get_type_hints(cls, include_extras=True)
    spec = translator.type_schema(hints["spec"], ("spec",))
    status = translator.type_schema(hints["status"], ("status",))
    return _root_schema(str(cls.__name__), spec, status)


RAYCLUSTER_COLUMNS: list[dict[str, Any]] = [
    {"jsonPath": ".status.desiredWorkerReplicas", "name": "desired workers", "type": "integer"},
    {"jsonPath": ".status.availableWorkerReplicas", "name": "available workers", "type": "integer"},
    {"jsonPath": ".status.desiredCPU", "name": "cpus", "type": "string"},
    {"jsonPath": ".status.desiredMemory", "name": "memory", "type": "string"},
    {"jsonPath": ".status.desiredGPU", "name": "gpus", "type": "string"},
    {"jsonPath": ".status.desiredTPU", "name": "tpus", "priority": 1, "type": "string"},
    {"jsonPath": ".status.state", "name": "status", "type": "string"},
    {"jsonPath": ".metadata.creationTimestamp", "name": "age", "type": "date"},
    {"jsonPath": ".status.head.podIP", "name": "head pod IP", "priority": 1, "type": "string"},
    {"jsonPath": ".status.head.serviceIP", "name": "head service IP", "priority": 1, "type": "string"},
]
RAYSERVICE_COLUMNS: list[dict[str, Any]] = [
    {"jsonPath": ".status.serviceStatus", "name": "service status", "type": "string"},
    {"jsonPath": ".status.numServeEndpoints", "name": "num serve endpoints", "type": "string"},
]
RAYJOB_COLUMNS: list[dict[str, Any]] = [
    {"jsonPath": ".status.jobStatus", "name": "job status", "type": "string"},
    {"jsonPath": ".status.jobDeploymentStatus", "name": "deployment status", "type": "string"},
    {"jsonPath": ".status.rayClusterName", "name": "ray cluster name", "type": "string"},
    {"jsonPath": ".status.startTime", "name": "start time", "type": "string"},
    {"jsonPath": ".status.endTime", "name": "end time", "type": "string"},
    {"jsonPath": ".metadata.creationTimestamp", "name": "age", "type": "date"},
]
RAYCRONJOB_COLUMNS: list[dict[str, Any]] = [
    {"jsonPath": ".spec.schedule", "name": "schedule", "type": "string"},
    {"jsonPath": ".spec.timeZone", "name": "timezone", "type": "string"},
    {"jsonPath": ".status.lastScheduleTime", "name": "last schedule", "type": "date"},
    {"jsonPath": ".metadata.creationTimestamp", "name": "age", "type": "date"},
    {"jsonPath": ".spec.suspend", "name": "suspend", "type": "boolean"},
]


def _crd(kind: str, schema: dict[str, Any], columns: list[dict[str, Any]]) -> dict[str, Any]:
    plural = f"{kind.lower()}s"
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "annotations": {GENERATOR_ANNOTATION: GENERATOR_COMMAND},
            "name": f"{plural}.{GROUP}",
        },
        "spec": {
            "group": GROUP,
            "names": {
                "categories": ["all"],
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "additionalPrinterColumns": columns,
                    "name": VERSION,
                    "schema": {"openAPIV3Schema": schema},
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def generate_crds(*, k8s: K8sSchemaBuilder | None = None) -> dict[str, dict[str, Any]]:
    """File name → CRD manifest, for every kind."""
    builder = k8s or K8sSchemaBuilder()
    return {
        CRD_FILES[0]: _crd("RayCluster", model_schema(RayCluster, k8s=builder), RAYCLUSTER_COLUMNS),
        CRD_FILES[1]: _crd("RayService", model_schema(RayService, k8s=builder), RAYSERVICE_COLUMNS),
        CRD_FILES[2]: _crd("RayJob", model_schema(RayJob, k8s=builder), RAYJOB_COLUMNS),
        CRD_FILES[3]: _crd("RayCronJob", model_schema(RayCronJob, k8s=builder), RAYCRONJOB_COLUMNS),
    }


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Never emit anchors/aliases: kubectl and humans read these files, and shared nodes are
    an artefact of how the schema was built, not structure."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def crd_to_yaml(crd: dict[str, Any]) -> str:
    body = yaml.dump(crd, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=100)
    return f"---\n{body}"


def write_crds(out_dir: str | Path) -> list[Path]:
    """Write every CRD into ``out_dir`` (created if missing); returns the paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, crd in generate_crds().items():
        path = out / name
        path.write_text(crd_to_yaml(crd))
        written.append(path)
    return written


def check_crds(out_dir: str | Path) -> list[str]:
    """Names of the CRD files in ``out_dir`` that are missing or differ from the generator's."""
    _Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    stale: list[str] = []
    for name, crd in generate_crds().items():
        path = Path(out_dir) / name
        if not path.exists() or yaml.load(path.read_text(), Loader=_Loader) != crd:
            stale.append(name)
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=GENERATOR_COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="config/crd/bases", help="output directory (default: %(default)s)")
    parser.add_argument("--check", action="store_true", help="exit 1 if the files in --out are stale")
    args = parser.parse_args(argv)
    if args.check:
        stale = check_crds(args.out)
        for name in stale:
            print(f"stale: {Path(args.out) / name} (regenerate with {GENERATOR_COMMAND})", file=sys.stderr)
        return 1 if stale else 0
    for path in write_crds(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
