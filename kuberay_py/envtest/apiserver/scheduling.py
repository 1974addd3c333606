"""``scheduling.k8s.io/v1alpha2`` Workload and PodGroup, Kubernetes 1.36's alpha gang-scheduling API.

kube-apiserver 1.36 serves the group only when started with
``--runtime-config=scheduling.k8s.io/v1alpha2=true`` and ``--feature-gates=GenericWorkload=true``
(KubeRay's WAS e2e kind config passes both); the built-in server takes the same two flags
(:func:`optional_types`). What a client reads back is what kube-apiserver 1.36.2 returns:

* a Workload template's ``schedulingConstraints`` is ``null`` (the field has no omitempty and is
  dropped while the alpha ``TopologyAwareWorkloadScheduling`` gate is off, as by default);
* a PodGroup gets ``disruptionMode: Pod`` (defaulted), ``podGroupTemplateRef: null`` when not
  given, no ``schedulingConstraints`` (same gate), an empty ``status`` on create, and the
  ``scheduling.k8s.io/podgroup-protection`` finalizer (kube-controller-manager's PodGroup
  protection controller would remove it; no API server does);
* neither tracks ``metadata.generation``.

Validation is the part a controller can trip over, with upstream's messages: templates
required, ``gang.minCount`` required and at least 1, a template reference naming its Workload,
and the immutable ``podGroupTemplates`` / ``controllerRef`` / ``schedulingPolicy`` /
``podGroupTemplateRef``. Not modelled: name formats inside the specs, the union checks of
``schedulingPolicy``, the 8-template limit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .core import ApiCore, Obj
from .errors import Cause
from .kinds import NoHooks
from .registry import ResourceType
from .validation import field_cause, invalid, required

__all__ = ["PODGROUP_PROTECTION", "SchedulingHooks", "optional_types"]

_GROUP = "scheduling.k8s.io"
PODGROUP_PROTECTION = "scheduling.k8s.io/podgroup-protection"

WORKLOADS = ResourceType(_GROUP, "v1alpha2", "Workload", "workloads")
PODGROUPS = ResourceType(_GROUP, "v1alpha2", "PodGroup", "podgroups", status_subresource=True)

#: ``--runtime-config`` group versions the built-in server can switch on, with the feature gate
#: kube-apiserver also needs for them.
_OPTIONAL: dict[str, tuple[str, tuple[ResourceType, ...]]] = {
    f"{_GROUP}/v1alpha2": ("GenericWorkload", (WORKLOADS, PODGROUPS)),
}


def _flag_values(args: Sequence[str], flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for arg in args:
        if arg.startswith(f"--{flag}="):
            for item in arg.split("=", 1)[1].split(","):
                key, _, value = item.partition("=")
                out[key.strip()] = value.strip() or "true"
    return out


def optional_types(args: Sequence[str]) -> tuple[ResourceType, ...]:
    """The resource types kube-apiserver flags ``args`` switch on; an unknown flag is an error.

    Only ``--runtime-config`` and ``--feature-gates`` are understood: the built-in server cannot
    honour others, and silently ignoring them would hand a test a server it did not ask for.
    """
    for arg in args:
        if not arg.startswith(("--runtime-config=", "--feature-gates=")):
            raise ValueError(f"the built-in API server does not implement the kube-apiserver flag {arg!r}")
    runtime = _flag_values(args, "runtime-config")
    gates = _flag_values(args, "feature-gates")
    out: list[ResourceType] = []
    for group_version, enabled in runtime.items():
        if group_version not in _OPTIONAL:
            raise ValueError(f"the built-in API server cannot serve --runtime-config {group_version!r}")
        gate, types = _OPTIONAL[group_version]
        if enabled.lower() == "true" and gates.get(gate, "false").lower() == "true":
            out += types
    return tuple(out)


def _policy_problems(policy: Any, path: str) -> list[Cause]:
    gang = policy.get("gang") if isinstance(policy, dict) else None
    if not isinstance(gang, dict):
        return []
    count = gang.get("minCount")
    if not count:
        return [required(f"{path}.gang.minCount")]
    if not isinstance(count, int) or count < 1:
        return [invalid(f"{path}.gang.minCount", count, "must be greater than or equal to 1")]
    return []


def _immutable(path: str) -> Cause:
    # kube-apiserver 1.36's declarative validation prints the value as null
    return field_cause("FieldValueInvalid", path, "Invalid value: null: field is immutable")


def _prepare_workload(spec: dict[str, Any]) -> list[Cause]:
    templates = spec.get("podGroupTemplates")
    if not templates:
        return [required("spec.podGroupTemplates")]
    causes: list[Cause] = []
    for i, template in enumerate(templates if isinstance(templates, list) else []):
        if isinstance(template, dict):
            template["schedulingConstraints"] = None  # TopologyAwareWorkloadScheduling is off
            causes += _policy_problems(
                template.get("schedulingPolicy"), f"spec.podGroupTemplates[{i}].schedulingPolicy"
            )
    return causes


def _prepare_pod_group(spec: dict[str, Any]) -> list[Cause]:
    spec.pop("schedulingConstraints", None)  # TopologyAwareWorkloadScheduling is off
    spec.setdefault("disruptionMode", "Pod")
    ref = spec.setdefault("podGroupTemplateRef", None)
    causes: list[Cause] = []
    if isinstance(ref, dict):
        ref.setdefault("workload", None)
        if ref["workload"] is None:
            causes.append(invalid("spec.podGroupTemplateRef", "", "must specify one of: `workload`"))
    return causes + _policy_problems(spec.get("schedulingPolicy"), "spec.schedulingPolicy")


class SchedulingHooks(NoHooks):
    def prepare_create(self, core: ApiCore, rt: ResourceType, obj: Obj) -> list[Cause]:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return [invalid("spec", spec, "must be an object")]
        if rt.plural == "workloads":
            return _prepare_workload(spec)
        obj["status"] = {}
        finalizers = obj["metadata"].setdefault("finalizers", [])
        if PODGROUP_PROTECTION not in finalizers:
            finalizers.append(PODGROUP_PROTECTION)
        return _prepare_pod_group(spec)

    def prepare_update(
        self, core: ApiCore, rt: ResourceType, old: Obj, new: Obj, subresource: str | None
    ) -> list[Cause]:
        if subresource == "status":
            return []
        spec = new.setdefault("spec", {})
        if not isinstance(spec, dict):
            return [invalid("spec", spec, "must be an object")]
        before = old.get("spec") or {}
        if rt.plural == "workloads":
            causes = _prepare_workload(spec)
            fields = ("controllerRef", "podGroupTemplates")
        else:
            causes = _prepare_pod_group(spec)
            fields = ("podGroupTemplateRef", "schedulingPolicy")
        return causes + [_immutable(f"spec.{f}") for f in fields if spec.get(f) != before.get(f)]
