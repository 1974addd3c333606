"""The ``ray start`` command KubeRay generates from ``rayStartParams`` and container resources.

The exact string matters: KubeRay stores it in ``KUBERAY_GEN_RAY_START_CMD`` and users' images
and scripts run or parse it. Flags are rendered in sorted key order with KubeRay's spacing
(`` --k=v `` per flag), ``"true"`` becomes a bare flag, ``"false"`` is dropped except for the
few options whose ``false`` is meaningful.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import orjson

from controllers import constants as C
from controllers.common.quantity import QuantityError, parse_quantity, value_ceil
from controllers.spechash.gojson import go_string
from kuberay_py.log import get_logger

__all__ = [
    "approximate_float",
    "container_command",
    "convert_cmd_to_string",
    "fold_group_labels",
    "fold_group_resources",
    "generate_ray_start_command",
    "go_float",
    "is_gpu_resource_key",
    "render_flags",
    "set_missing_ray_start_params",
]

# Options whose value may legitimately be "false" (e.g. --log-color=false), rendered as --k=v.
_SPECIAL_BOOLEAN_OPTIONS = ("log-color", "include-dashboard", "include-log-monitor")
_ULIMIT = "ulimit -n ${" + C.RAY_START_ULIMIT_OPEN_FILES + ":-65536}"
_MIG = re.compile(r"nvidia\.com/mig-\d+g\.\d+gb$")
# Container resource -> Ray resource for the accelerators KubeRay recognises besides GPUs.
_ACCELERATORS = {"aws.amazon.com/neuroncore": "neuron_cores", "google.com/tpu": "TPU"}

log = get_logger(__name__)


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


def is_gpu_resource_key(key: str) -> bool:
    """KubeRay's ``IsGPUResourceKey``: ``*gpu`` (``nvidia.com/gpu``) or an NVIDIA MIG slice."""
    return key.endswith("gpu") or _MIG.search(key) is not None


def approximate_float(value: Any) -> float:
    """``Quantity.AsApproximateFloat64``: the unscaled integer times a power of ten, in floats.

    Done the way apimachinery does it (``base * math.Pow10(exp)``, a division for negative
    powers) so the JSON in ``--resources`` carries the same digits as KubeRay's.
    """
    sign, digits, exponent = parse_quantity(value).as_tuple()
    if not isinstance(exponent, int):  # NaN/Infinity: parse_quantity never returns them
        raise QuantityError(f"invalid quantity {value!r}")
    base = float(int("".join(map(str, digits)) or "0"))
    if sign:
        base = -base
    if exponent == 0:
        return base
    if exponent > 0:
        return base * float(f"1e{exponent}")
    return base / float(f"1e{-exponent}")


def go_float(value: float) -> str:
    """A float64 as Go's ``encoding/json`` writes it (``1``, ``0.5``, ``1e+21``, ``1e-7``)."""
    magnitude = abs(value)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        text = repr(value)  # shortest round-trip digits, exponent with at least two digits
        mantissa, _, exp = text.partition("e")
        sign, digits = exp[0], exp[1:].lstrip("0") or "0"
        if sign == "+":
            return f"{mantissa}e+{digits.zfill(2)}"
        return f"{mantissa}e-{digits}"
    text = format(Decimal(repr(value)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _resources_json(resources: dict[str, float]) -> str:
    """``json.Marshal(map[string]float64)`` wrapped in single quotes, as KubeRay passes it."""
    body = ",".join(f"{go_string(k)}:{go_float(resources[k])}" for k in sorted(resources))
    return "'{" + body + "}'"


def fold_group_resources(params: dict[str, str], group_resources: dict[str, Any] | None) -> None:
    """The group's top-level ``resources`` into ``rayStartParams`` (KubeRay's
    ``updateRayStartParamsResources``): CPU, memory and GPU become ``num-cpus`` / ``memory`` /
    ``num-gpus`` (rounded up), everything else the ``--resources`` JSON. Names are matched
    case-insensitively; an unparsable quantity is skipped. Validation rejects setting these in
    both places, so nothing of the user's is overwritten."""
    if not group_resources:
        return
    custom: dict[str, float] = {}
    for name in sorted(group_resources):
        raw = group_resources[name]
        try:
            parse_quantity(raw)
        except QuantityError:
            log.info("skipping group resource with an invalid quantity", resource=name, quantity=raw)
            continue
        lowered = name.lower()
        if lowered == "cpu":
            params["num-cpus"] = str(value_ceil(raw))
        elif lowered == "memory":
            params["memory"] = str(value_ceil(raw))
        elif is_gpu_resource_key(lowered):
            params["num-gpus"] = str(value_ceil(raw))
        else:
            custom[name] = approximate_float(raw)
    if custom:
        params["resources"] = _resources_json(custom)


def fold_group_labels(params: dict[str, str], group_labels: dict[str, Any] | None) -> None:
    """The group's top-level ``labels`` as ``--labels=k1=v1,k2=v2`` (sorted keys, unquoted), as
    KubeRay's ``updateRayStartParamsLabels`` writes them."""
    if group_labels:
        params["labels"] = ",".join(f"{k}={group_labels[k]}" for k in sorted(group_labels))


def _resources_map(params: dict[str, str]) -> dict[str, float]:
    """The ``resources`` param as a map; surrounding quotes/backticks/spaces are ignored."""
    raw = params.get("resources")
    if raw is None:
        return {}
    parsed = orjson.loads(raw.strip("'\"` "))
    if not isinstance(parsed, dict) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in parsed.values()
    ):
        raise ValueError("resources is not a JSON object of numbers")
    return {str(k): float(v) for k, v in parsed.items()}


def _add_accelerator_params(out: dict[str, str], limits: dict[str, Any]) -> None:
    """KubeRay's ``addWellKnownAcceleratorResources``: ``num-gpus`` from the first GPU limit and
    the first TPU / Neuron core limit merged into ``resources``, unless already given. A
    ``resources`` param that is not a JSON map of numbers stops both (KubeRay logs and skips)."""
    if not limits:
        return
    try:
        current = _resources_map(out)
    except ValueError as exc:
        log.error("failed to add accelerator resources to rayStartParams", error=str(exc))
        return
    accelerator_present = any(name in current for name in _ACCELERATORS.values())
    for key in sorted(limits):
        if "num-gpus" not in out and is_gpu_resource_key(key) and _nonzero(limits, key) is not None:
            out["num-gpus"] = str(value_ceil(limits[key]))
        if not accelerator_present and key in _ACCELERATORS and _nonzero(limits, key) is not None:
            if _ACCELERATORS[key] not in current:
                current[_ACCELERATORS[key]] = approximate_float(limits[key])
                out["resources"] = _resources_json(current)
            accelerator_present = True


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
    _add_accelerator_params(out, limits)
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
