"""The parts of kube-apiserver's Pod validation that operator-built Pods most often trip over.

A Pod template is assembled by code (container names from group names, port names from
constants, volume mounts from user config); a real server rejects a 16-character port name or a
mount of an undeclared volume, and so must the built-in one, or the bug only shows in a cluster.
Messages follow ``k8s.io/kubernetes/pkg/apis/core/validation``.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from .errors import Cause, field_cause
from .validation import invalid, name_problems, required

__all__ = ["validate_pod_spec"]

_IANA_SVC = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
_PROTOCOLS = ("TCP", "UDP", "SCTP")
_RESTART = ("Always", "OnFailure", "Never")


def _q(v: Any) -> str:
    return orjson.dumps(v).decode()


def duplicate(path: str, value: Any) -> Cause:
    return field_cause("FieldValueDuplicate", path, f"Duplicate value: {_q(value)}")


def not_found(path: str, value: Any) -> Cause:
    return field_cause("FieldValueNotFound", path, f"Not found: {_q(value)}")


def not_supported(path: str, value: Any, supported: tuple[str, ...]) -> Cause:
    values = ", ".join(_q(s) for s in supported)
    return field_cause(
        "FieldValueNotSupported", path, f"Unsupported value: {_q(value)}: supported values: {values}"
    )


def _port_name_problems(name: str) -> list[str]:
    out = []
    if len(name) > 15:
        out.append("must be no more than 15 characters")
    if not _IANA_SVC.match(name):
        out.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if "--" in name:
        out.append("must not contain consecutive hyphens")
    if name and not re.search(r"[a-z]", name):
        out.append("must contain at least one letter (a-z)")
    return out


def _container(c: Any, path: str, volumes: set[str], names: set[str]) -> list[Cause]:
    if not isinstance(c, dict):
        return [invalid(path, c, "must be an object")]
    causes: list[Cause] = []
    name = c.get("name")
    if not name:
        causes.append(required(f"{path}.name"))
    else:
        causes.extend(invalid(f"{path}.name", name, m) for m in name_problems(str(name), "label"))
        if name in names:
            causes.append(duplicate(f"{path}.name", name))
        names.add(name)
    if not c.get("image"):
        causes.append(required(f"{path}.image"))
    port_names: set[str] = set()
    for i, p in enumerate(c.get("ports") or []):
        ppath = f"{path}.ports[{i}]"
        if not isinstance(p, dict):
            continue
        cp = p.get("containerPort")
        if not cp:
            causes.append(required(f"{ppath}.containerPort"))
        elif not isinstance(cp, int) or not 1 <= cp <= 65535:
            causes.append(invalid(f"{ppath}.containerPort", cp, "must be between 1 and 65535, inclusive"))
        pname = p.get("name")
        if pname:
            causes.extend(invalid(f"{ppath}.name", pname, m) for m in _port_name_problems(str(pname)))
            if pname in port_names:
                causes.append(duplicate(f"{ppath}.name", pname))
            port_names.add(pname)
        proto = p.get("protocol", "TCP")
        if proto not in _PROTOCOLS:
            causes.append(not_supported(f"{ppath}.protocol", proto, _PROTOCOLS))
    for i, e in enumerate(c.get("env") or []):
        if isinstance(e, dict) and not e.get("name"):
            causes.append(required(f"{path}.env[{i}].name"))
    mount_paths: set[str] = set()
    for i, m in enumerate(c.get("volumeMounts") or []):
        mpath = f"{path}.volumeMounts[{i}]"
        if not isinstance(m, dict):
            continue
        if not m.get("name"):
            causes.append(required(f"{mpath}.name"))
        elif m["name"] not in volumes:
            causes.append(not_found(f"{mpath}.name", m["name"]))
        mp = m.get("mountPath")
        if not mp:
            causes.append(required(f"{mpath}.mountPath"))
        elif mp in mount_paths:
            causes.append(invalid(f"{mpath}.mountPath", mp, "must be unique"))
        else:
            mount_paths.add(mp)
    return causes


def validate_pod_spec(spec: dict[str, Any], path: str = "spec") -> list[Cause]:
    causes: list[Cause] = []
    volumes: set[str] = set()
    for i, v in enumerate(spec.get("volumes") or []):
        if not isinstance(v, dict):
            continue
        name = v.get("name")
        if not name:
            causes.append(required(f"{path}.volumes[{i}].name"))
            continue
        causes.extend(
            invalid(f"{path}.volumes[{i}].name", name, m) for m in name_problems(str(name), "label")
        )
        if name in volumes:
            causes.append(duplicate(f"{path}.volumes[{i}].name", name))
        volumes.add(name)
    if not spec.get("containers"):
        causes.append(required(f"{path}.containers"))
    names: set[str] = set()
    for key in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(key) or []):
            causes.extend(_container(c, f"{path}.{key}[{i}]", volumes, names))
    restart = spec.get("restartPolicy")
    if restart is not None and restart not in _RESTART:
        causes.append(not_supported(f"{path}.restartPolicy", restart, _RESTART))
    return causes
