"""Liveness and readiness probes for Ray containers: PR #1808's rules at KubeRay HEAD.

* A probe is injected only where the user left it nil, each probe on its own; a user's probe is
  never modified (not even to add the serve check).
* Head: raylet && GCS checks; worker: raylet check. Liveness failure threshold 120.
* The worker of a RayService-created cluster gets readiness = raylet && serve ``/-/healthz`` on
  the Pod's own ``serve`` container port, failure threshold 1, always an exec probe.
* Ray >= 2.53 gets ``httpGet /api/healthz`` on the dashboard-agent port instead of exec (#4448),
  except for that serve-worker readiness probe.
* Beyond KubeRay: when the RayService's proxies do not run on workers (``proxy_location``
  HeadOnly/Disabled) the serve check is left out, so workers can become Ready (#4994).

Timeout generation: KubeRay >= v1.4 (probe timeout 2 s worker / 5 s head, ``wget --tries 1``,
``-T 2`` raylet, ``-T 10`` GCS and serve). See docs/differences.md.
"""

from __future__ import annotations

from typing import Any

from controllers import constants as C
from controllers.common import ray_version as rv
from controllers.common.cluster import find_container_port

__all__ = ["inject_probes", "supports_unified_health_check", "wget_health_command"]


def wget_health_command(timeout: int, port: int, path: str) -> str:
    return C.BASE_WGET_HEALTH_COMMAND.format(timeout, port, path)


def supports_unified_health_check(ray_version: str | None) -> bool:
    """Ray >= 2.53.0 answers ``/api/healthz``; an unset or unparsable version keeps exec probes."""
    return rv.at_least(ray_version, rv.UNIFIED_HEALTH_CHECK)


def _port_param(params: dict[str, Any], key: str, default: int) -> int:
    raw = params.get(key)
    if raw is None:
        return default
    try:
        port = int(str(raw).strip())
    except ValueError:
        return default
    return port if 1 <= port <= 65535 else default


def inject_probes(
    container: dict[str, Any],
    node_type: str,
    ray_start_params: dict[str, Any],
    *,
    ray_version: str | None,
    serve_worker: bool,
) -> None:
    """Fill in nil probes on the Ray container (mutates ``container``, a fresh copy)."""
    is_head = node_type == C.NODE_TYPE_HEAD
    agent_port = _port_param(
        ray_start_params, "dashboard-agent-listen-port", C.DEFAULT_DASHBOARD_AGENT_LISTEN_PORT
    )
    dashboard_port = _port_param(ray_start_params, "dashboard-port", C.DEFAULT_DASHBOARD_PORT)
    commands = [
        wget_health_command(
            C.DEFAULT_READINESS_PROBE_TIMEOUT_SECONDS, agent_port, C.RAY_AGENT_RAYLET_HEALTH_PATH
        )
    ]
    if is_head:
        commands.append(
            wget_health_command(
                C.DEFAULT_READINESS_PROBE_FAILURE_THRESHOLD, dashboard_port, C.RAY_DASHBOARD_GCS_HEALTH_PATH
            )
        )
    unified = supports_unified_health_check(ray_version)

    def handler() -> dict[str, Any]:
        if unified:
            return {"httpGet": {"path": C.RAY_UNIFIED_HEALTH_PATH, "port": agent_port}}
        return {"exec": {"command": ["bash", "-c", " && ".join(commands)]}}

    if container.get("livenessProbe") is None:
        container["livenessProbe"] = {
            **handler(),
            "initialDelaySeconds": C.DEFAULT_LIVENESS_PROBE_INITIAL_DELAY_SECONDS,
            "timeoutSeconds": C.DEFAULT_HEAD_LIVENESS_PROBE_TIMEOUT_SECONDS
            if is_head
            else C.DEFAULT_LIVENESS_PROBE_TIMEOUT_SECONDS,
            "periodSeconds": C.DEFAULT_LIVENESS_PROBE_PERIOD_SECONDS,
            "successThreshold": C.DEFAULT_LIVENESS_PROBE_SUCCESS_THRESHOLD,
            "failureThreshold": C.DEFAULT_LIVENESS_PROBE_FAILURE_THRESHOLD,
        }
    if container.get("readinessProbe") is None:
        probe: dict[str, Any] = {
            **handler(),
            "initialDelaySeconds": C.DEFAULT_READINESS_PROBE_INITIAL_DELAY_SECONDS,
            "timeoutSeconds": C.DEFAULT_HEAD_READINESS_PROBE_TIMEOUT_SECONDS
            if is_head
            else C.DEFAULT_READINESS_PROBE_TIMEOUT_SECONDS,
            "periodSeconds": C.DEFAULT_READINESS_PROBE_PERIOD_SECONDS,
            "successThreshold": C.DEFAULT_READINESS_PROBE_SUCCESS_THRESHOLD,
            "failureThreshold": C.DEFAULT_READINESS_PROBE_FAILURE_THRESHOLD,
        }
        if serve_worker and not is_head:
            serve_port = find_container_port(container, C.SERVING_PORT_NAME, C.DEFAULT_SERVING_PORT)
            serve_cmd = wget_health_command(
                C.DEFAULT_READINESS_PROBE_INITIAL_DELAY_SECONDS, serve_port, C.RAY_SERVE_PROXY_HEALTH_PATH
            )
            probe.pop("httpGet", None)
            probe = {
                "exec": {"command": ["bash", "-c", " && ".join([*commands, serve_cmd])]},
                **{k: v for k, v in probe.items() if k != "exec"},
            }
            probe["failureThreshold"] = C.SERVE_READINESS_PROBE_FAILURE_THRESHOLD
        container["readinessProbe"] = probe
