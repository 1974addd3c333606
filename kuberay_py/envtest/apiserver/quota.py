"""ResourceQuota admission for Pods (kube-apiserver's ``ResourceQuota`` plugin, on by default).

A Pod create is refused with 403 when it would take a namespace past a quota's ``spec.hard``
(``pods``/``count/pods``, ``cpu``/``requests.cpu``, ``memory``/``requests.memory``,
``limits.cpu``, ``limits.memory``), or when a quota constrains a compute resource the Pod's
containers do not declare. Operators see this as "forbidden: exceeded quota" on their creates
(KubeRay reports it in the RayCluster's ReplicaFailure condition).

Usage is summed from the stored Pods at admission time (non-terminal, not being deleted) rather
than from ``status.used`` kept by kube-controller-manager's quota controller, which the built-in
server does not run; the answers are the same. Quantities in messages are printed in plain units
(``cpu=500m``, ``memory=1000000000``), where kube prints each in its own canonical suffix.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from .errors import StatusError
from .store import Storage

__all__ = ["admit_pod"]

_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
# quota resource name -> (which container field, which resource)
_COMPUTE = {
    "cpu": ("requests", "cpu"),
    "requests.cpu": ("requests", "cpu"),
    "memory": ("requests", "memory"),
    "requests.memory": ("requests", "memory"),
    "limits.cpu": ("limits", "cpu"),
    "limits.memory": ("limits", "memory"),
}
_COUNTS = ("pods", "count/pods")


def _quantity(value: Any) -> Decimal | None:
    text = str(value).strip()
    if not text:
        return None
    try:
        for suffix, power in _BINARY.items():
            if text.endswith(suffix):
                return Decimal(text[: -len(suffix)]) * (Decimal(2) ** power)
        if text[-1] in "numkMGTPE":
            return Decimal(text[:-1]) * (Decimal(10) ** _DECIMAL[text[-1]])
        return Decimal(text)
    except InvalidOperation:
        return None


def _show(value: Decimal) -> str:
    if value == value.to_integral_value():
        return str(int(value))
    return f"{int((value * 1000).to_integral_value(rounding='ROUND_CEILING'))}m"


def _container_value(container: dict[str, Any], field: str, resource: str) -> Decimal | None:
    resources = container.get("resources") or {}
    value = (resources.get(field) or {}).get(resource)
    if value is None and field == "requests":  # an unset request defaults to the limit
        value = (resources.get("limits") or {}).get(resource)
    return None if value is None else _quantity(value)


def _pod_usage(pod: dict[str, Any], field: str, resource: str) -> Decimal:
    """Sum over containers, or the largest init container if that is more (kube's rule)."""
    spec = pod.get("spec") or {}
    total = sum(
        (_container_value(c, field, resource) or Decimal(0) for c in spec.get("containers") or []), Decimal(0)
    )
    init = [_container_value(c, field, resource) or Decimal(0) for c in spec.get("initContainers") or []]
    return max([total, *init])


def _counts(pod: dict[str, Any]) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


def admit_pod(storage: Storage, pod: dict[str, Any]) -> None:
    """Raise 403 Forbidden if creating ``pod`` would break a quota of its namespace."""
    namespace = pod["metadata"].get("namespace") or ""
    name = pod["metadata"].get("name") or ""
    quotas = storage.buckets.get(("", "resourcequotas"))
    if quotas is None:
        return
    pods_bucket = storage.buckets.get(("", "pods"))
    existing = (
        [o for k, o in pods_bucket.objects.items() if k[0] == namespace and _counts(o)] if pods_bucket else []
    )
    for key, quota in sorted(quotas.objects.items()):
        if key[0] != namespace:
            continue
        hard = dict((quota.get("spec") or {}).get("hard") or {})
        qname = quota["metadata"]["name"]
        missing = sorted(r for r in hard if r in _COMPUTE and _missing(pod, *_COMPUTE[r]))
        if missing:
            containers = sorted(
                c.get("name", "")
                for c in (pod.get("spec") or {}).get("containers") or []
                if any(_container_value(c, *_COMPUTE[r]) is None for r in missing)
            )
            why = f"failed quota: {qname}: must specify {','.join(missing)} for: {','.join(containers)}"
            raise StatusError.forbidden("", "pods", name, why)
        requested: dict[str, Decimal] = {}
        used: dict[str, Decimal] = {}
        limited: dict[str, Decimal] = {}
        for resource, value in sorted(hard.items()):
            limit = _quantity(value)
            if limit is None:
                continue
            if resource in _COUNTS:
                req, now = Decimal(1), Decimal(len(existing))
            elif resource in _COMPUTE:
                field, res = _COMPUTE[resource]
                req = _pod_usage(pod, field, res)
                now = sum((_pod_usage(p, field, res) for p in existing), Decimal(0))
            else:
                continue
            if req > 0 and now + req > limit:
                requested[resource], used[resource], limited[resource] = req, now, limit
        if requested:

            def show(values: dict[str, Decimal]) -> str:
                return ",".join(f"{k}={_show(v)}" for k, v in values.items())

            why = (
                f"exceeded quota: {qname}, requested: {show(requested)}, used: {show(used)}, "
                f"limited: {show(limited)}"
            )
            raise StatusError.forbidden("", "pods", name, why)


def _missing(pod: dict[str, Any], field: str, resource: str) -> bool:
    containers = (pod.get("spec") or {}).get("containers") or []
    return any(_container_value(c, field, resource) is None for c in containers)
