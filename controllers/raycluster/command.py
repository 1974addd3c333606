"""The ``ray start`` command KubeRay generates from ``rayStartParams`` and container resources.

The exact string matters: KubeRay stores it in ``KUBERAY_GEN_RAY_START_CMD`` and users' images
and scripts run or parse it. Flags are rendered in sorted key order with KubeRay's spacing
(`` --k=v `` per flag), ``"true"`` becomes a bare flag, ``"false"`` is dropped except for the
few options whose ``false`` is meaningful.
"""

from __future__ import annotations

import shlex
from typing import Any

import orjson

from controllers import constants as C
from controllers.raycluster.quantity import QuantityError, parse_quantity, value_ceil

__all__ = [
    "container_command",
    "convert_cmd_to_string",
    "generate_ray_start_command",
    "render_flags",
    "set_missing_ray_start_params",
]

# Options whose value may legitimately be "false" (e.g. --log-color=false), rendered as --k=v.
_SPECIAL_BOOLEAN_OPTIONS = ("log-color", "include-dashboard", "include-log-monitor")
_ULIMIT = "ulimit -n ${" + C.RAY_START_ULIMIT_OPEN_FILES + ":-65536}"


def set_missing_ray_start_params(
    params: dict[str, str], node_type: str, head_port: str, fqdn_ray_ip: str
) -> dict[str, str]:
    """KubeRay's defaults: worker ``address``, head ``dashboard-host``, metrics port, ``block``."""
    out = {str(k): str(v) for k, v in params.items()}
    if node_type == C.NODE_TYPE_WORKER and "address" not in out:
        out["address"] = f"{fqdn_ray_ip}:{head_port}"
    if node_type == C.NODE_TYPE_HEAD and "dashboard-host" not in out:
        out["dashboard-host"] = "0.0.0.0"
    out.setdefault("metrics-export-port", str(C.DEFAULT_METRICS_PORT))
    # --block keeps `ray start` in the foreground so the container lives as long as Ray (#675).
    out["block"] = "true"
    out.setdefault("dashboard-agent-listen-port", str(C.DEFAULT_DASHBOARD_AGENT_LISTEN_PORT))
    return out


def _nonzero(resources: dict[str, Any], key: str) -> Any | None:
    value = resources.get(key)
    if value is None:
        return None
    try:
        return value if parse_quantity(value) != 0 else None
    except QuantityError:
        return None


def add_resource_params(params: dict[str, str], resources: dict[str, Any]) -> dict[str, str]:
    """Infer num-cpus / memory / num-gpus / custom accelerators from the Ray container's resources."""
    out = dict(params)
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    if "num-cpus" not in out:
        cpu = _nonzero(limits, "cpu") or _nonzero(requests, "cpu")
        if cpu is not None:
            out["num-cpus"] = str(value_ceil(cpu))
    if "memory" not in out:
        memory = _nonzero(limits, "memory")
        if memory is not None:
            out["memory"] = str(value_ceil(memory))
    if "num-gpus" not in out:
        for key in sorted(limits):
            if key.endswith("gpu") and _nonzero(limits, key) is not None:
                out["num-gpus"] = str(value_ceil(limits[key]))
                break
    if "resources" not in out:
        for key, ray_name in (("aws.amazon.com/neuroncore", "neuron_cores"), ("google.com/tpu", "TPU")):
            if _nonzero(limits, key) is not None:
                encoded = orjson.dumps({ray_name: value_ceil(limits[key])}).decode()
                out["resources"] = shlex.quote(encoded)
                break
    return out


def render_flags(params: dict[str, str]) -> str:
    parts: list[str] = []
    for key in sorted(params):
        value = params[key]
        if key in _SPECIAL_BOOLEAN_OPTIONS:
            parts.append(f" --{key}={value} ")
            continue
        lowered = value.strip().lower()
        if lowered == "true":
            parts.append(f" --{key} ")
        elif lowered == "false":
            continue
        else:
            parts.append(f" --{key}={value} ")
    return "".join(parts)


def generate_ray_start_command(node_type: str, params: dict[str, str], resources: dict[str, Any]) -> str:
    full = add_resource_params(params, resources)
    if node_type == C.NODE_TYPE_HEAD:
        return f"ray start --head {render_flags(full)}"
    return f"ray start {render_flags(full)}"


def convert_cmd_to_string(parts: list[str]) -> str:
    return "".join(f" {p} " for p in parts)


def container_command(
    container: dict[str, Any], ray_start_cmd: str, *, overwrite: bool, login_shell: bool
) -> tuple[list[str], list[str]] | None:
    """The Ray container's new (command, args), or None to leave the user's command alone.

    A user command or args that already run ``ray start`` is kept, as is any command when the
    CR carries ``ray.io/overwrite-container-cmd: "true"``. Otherwise the user's command runs
    first and ``ray start --block`` last, because nothing after a blocking start would run.
    """
    cmd = ""
    if container.get("command"):
        cmd = convert_cmd_to_string([str(c) for c in container["command"]])
    if container.get("args"):
        cmd += convert_cmd_to_string([str(a) for a in container["args"]])
    if overwrite or "ray start" in cmd:
        return None
    generated = f"{_ULIMIT}; {ray_start_cmd}"
    args = f"{cmd} && {generated}" if cmd else generated
    return ["/bin/bash", "-lc" if login_shell else "-c", "--"], [args]
