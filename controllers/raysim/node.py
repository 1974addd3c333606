"""What a Pod's Ray container says about the Ray node it runs: parsed from its ``ray start`` line.

KubeRay renders ``ray start [--head] --k=v ...`` into the container's ``args`` (after a ``ulimit``),
and users may write their own command; either way the node's ports and CPU count are whatever
that line says, with Ray's defaults for what it leaves out. ``num-cpus`` absent means Ray's
autodetection, which inside a container reads the cgroup CPU limit: the container's CPU limit
(else request), rounded down, at least 1.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass
from typing import Any

from controllers import constants as C

__all__ = ["RayNodeSpec", "node_spec_for_pod", "parse_ray_start"]

_CPU_RE = re.compile(r"^([0-9.]+)(m?)$")


@dataclass(frozen=True)
class RayNodeSpec:
    namespace: str
    cluster: str
    pod_name: str
    pod_uid: str
    is_head: bool
    num_cpus: float
    dashboard_port: int = C.DEFAULT_DASHBOARD_PORT
    agent_port: int = C.DEFAULT_DASHBOARD_AGENT_LISTEN_PORT
    gcs_port: int = C.DEFAULT_GCS_SERVER_PORT
    metrics_port: int = C.DEFAULT_METRICS_PORT
    auth_token: str | None = None


def parse_ray_start(text: str) -> tuple[bool, dict[str, str]] | None:
    """(is_head, flags) from the first ``ray start`` in a shell line, or None if there is none."""
    idx = text.find("ray start")
    if idx < 0:
        return None
    rest = re.split(r"&&|;|\|\|", text[idx + len("ray start") :], maxsplit=1)[0]
    try:
        words = shlex.split(rest)
    except ValueError:
        words = rest.split()
    flags: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("--"):
            key, eq, value = word[2:].partition("=")
            if eq:
                flags[key] = value
            elif i + 1 < len(words) and not words[i + 1].startswith("-"):
                flags[key] = words[i + 1]
                i += 1
            else:
                flags[key] = "true"
        i += 1
    return "head" in flags, flags


def _cpu_from_resources(container: dict[str, Any]) -> float:
    resources = container.get("resources") or {}
    for section in ("limits", "requests"):
        raw = (resources.get(section) or {}).get("cpu")
        if raw is None:
            continue
        m = _CPU_RE.match(str(raw))
        if m:
            value = float(m.group(1)) / (1000 if m.group(2) else 1)
            return float(max(1, math.floor(value)))
    return 1.0


def _port(flags: dict[str, str], key: str, default: int) -> int:
    try:
        value = int(flags.get(key, default))
    except ValueError:
        return default
    return value if 0 < value < 65536 else default


def _env(container: dict[str, Any], name: str) -> str | None:
    for e in container.get("env") or []:
        if e.get("name") == name and "value" in e:
            return str(e["value"])
    return None


def token_secret_ref(pod: dict[str, Any]) -> tuple[str, str] | None:
    """(Secret name, key) that the Pod's ``RAY_AUTH_TOKEN`` is read from, if it is a Secret ref."""
    for container in (pod.get("spec") or {}).get("containers") or []:
        for e in container.get("env") or []:
            if e.get("name") != "RAY_AUTH_TOKEN":
                continue
            ref = (e.get("valueFrom") or {}).get("secretKeyRef") or {}
            if ref.get("name") and ref.get("key"):
                return str(ref["name"]), str(ref["key"])
    return None


def node_spec_for_pod(pod: dict[str, Any], default_token: str | None = None) -> RayNodeSpec | None:
    """The Ray node a Pod runs, or None when it is not a Ray Pod (no labels, or no ``ray start``)."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    node_type = labels.get(C.RAY_NODE_TYPE_LABEL_KEY)
    cluster = labels.get(C.RAY_CLUSTER_LABEL_KEY)
    if node_type not in (C.NODE_TYPE_HEAD, C.NODE_TYPE_WORKER) or not cluster:
        return None
    for container in (pod.get("spec") or {}).get("containers") or []:
        line = " ".join(str(x) for x in (container.get("command") or []) + (container.get("args") or []))
        parsed = parse_ray_start(line)
        if parsed is None:
            continue
        is_head, flags = parsed
        if "num-cpus" in flags:
            try:
                num_cpus = max(0.0, float(flags["num-cpus"]))
            except ValueError:
                num_cpus = _cpu_from_resources(container)
        else:
            num_cpus = _cpu_from_resources(container)
        token = None
        if (_env(container, "RAY_AUTH_MODE") or "").lower() == "token":
            # Token auth with no token anywhere accepts nothing ("" matches no request), as a
            # real head without its token would never serve a request.
            token = _env(container, "RAY_AUTH_TOKEN") or default_token or ""
        return RayNodeSpec(
            namespace=meta.get("namespace", ""),
            cluster=cluster,
            pod_name=meta.get("name", ""),
            pod_uid=meta.get("uid", ""),
            is_head=is_head or node_type == C.NODE_TYPE_HEAD,
            num_cpus=num_cpus,
            dashboard_port=_port(flags, "dashboard-port", C.DEFAULT_DASHBOARD_PORT),
            agent_port=_port(flags, "dashboard-agent-listen-port", C.DEFAULT_DASHBOARD_AGENT_LISTEN_PORT),
            gcs_port=_port(flags, "port", C.DEFAULT_GCS_SERVER_PORT),
            metrics_port=_port(flags, "metrics-export-port", C.DEFAULT_METRICS_PORT),
            auth_token=token,
        )
    return None
