"""A ray.io spec as KubeRay's Go types write it back: the round trip behind its whole-object writes.

KubeRay never writes a spec as it read it: it decodes the object into its Go structs and sends
``json.Marshal`` of them. That round trip adds what the structs always emit (``"metadata":{}`` in
every pod template, ``"resources":{}`` in every container, ``"scaleStrategy":{}``, ``"rayStartParams"``
once ``setDefaults`` made it ``{}``), writes quantities canonically (``"0.5"`` -> ``"500m"``) and
drops what the structs do not know. kube-apiserver compares the stored spec with the written one
and bumps ``metadata.generation`` when they differ, so the first such write (adding a finalizer)
moves a hand-written spec to generation 2, while a spec that is already in this form stays put.
Writing the same bytes is what keeps ``generation`` and every ``observedGeneration`` equal to
KubeRay's.

The encoding is :mod:`controllers.spechash.gojson` (the same tables as the spec hashes). ``null``
members are left out of the result: the Go output has them for nil fields without ``omitempty``,
and the API server drops a ``null`` of a non-nullable field before storing (no spec field of the
ray.io CRDs is nullable), so leaving them out stores the same object and keeps comparisons with
stored objects meaningful.
"""

from __future__ import annotations

from typing import Any

import orjson

from controllers.spechash.gojson import default_encoder

__all__ = [
    "RAYCRONJOB_SPEC_TYPE",
    "RAYJOB_SPEC_TYPE",
    "RAYSERVICE_SPEC_TYPE",
    "SPEC_TYPES",
    "go_round_trip",
    "go_typed_spec",
    "kuberay_cluster_defaults",
]

_V1 = "github.com/ray-project/kuberay/ray-operator/apis/ray/v1."
RAYSERVICE_SPEC_TYPE = _V1 + "RayServiceSpec"
RAYJOB_SPEC_TYPE = _V1 + "RayJobSpec"
RAYCRONJOB_SPEC_TYPE = _V1 + "RayCronJobSpec"
SPEC_TYPES: dict[str, str] = {
    "RayCluster": _V1 + "RayClusterSpec",
    "RayService": RAYSERVICE_SPEC_TYPE,
    "RayJob": RAYJOB_SPEC_TYPE,
    "RayCronJob": RAYCRONJOB_SPEC_TYPE,
}


def go_round_trip(value: Any, type_key: str) -> dict[str, Any]:
    """``value`` decoded into the Go type ``type_key`` and encoded again, ``null`` members dropped."""
    decoded: dict[str, Any] = _without_nulls(orjson.loads(default_encoder().encode(value, type_key)))
    return decoded


def go_typed_spec(kind: str, spec: Any) -> dict[str, Any]:
    """The spec of a ``kind`` object as KubeRay's typed Update sends it.

    A RayCluster goes through KubeRay's ``setDefaults`` first (its reconcile runs it on the
    object it later updates).
    """
    if kind == "RayCluster":
        spec = kuberay_cluster_defaults(spec if isinstance(spec, dict) else {})
    return go_round_trip(spec, SPEC_TYPES[kind])


def kuberay_cluster_defaults(spec: dict[str, Any]) -> dict[str, Any]:
    """KubeRay's ``setDefaults`` on a RayCluster spec: a nil ``rayStartParams`` becomes ``{}``.

    ``rayStartParams`` has no ``omitempty``, so the difference shows: ``{}`` is written where the
    user wrote nothing. Returns a shallow copy; the input is not mutated.
    """
    out = dict(spec)
    head = out.get("headGroupSpec")
    if isinstance(head, dict) and head.get("rayStartParams") is None:
        out["headGroupSpec"] = {**head, "rayStartParams": {}}
    groups = out.get("workerGroupSpecs")
    if isinstance(groups, list):
        out["workerGroupSpecs"] = [
            {**g, "rayStartParams": {}} if isinstance(g, dict) and g.get("rayStartParams") is None else g
            for g in groups
        ]
    return out


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value
