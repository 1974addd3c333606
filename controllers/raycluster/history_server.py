"""The history server's collector sidecar (``historyServerOptions``, gate RayClusterHistoryServer).

With ``historyServerOptions.collectorOptions`` set, KubeRay v1.7.0 adds to every head and worker
Pod a ``ray-history-collector`` container that ships the node's logs and Ray events to object
storage, and points Ray at it:

* the collector: the given image, pull policy (default IfNotPresent) and resources (default
  50m/64Mi requested, 200m/256Mi limit); env ``POD_IP``, ``RAY_CLUSTER_NAME``,
  ``RAY_CLUSTER_NAMESPACE``, ``RAY_ROLE`` (Head/Worker), ``EVENTS_PORT=8084``, ``FQ_RAY_IP``, the
  owner (``OWNER_KIND``/``OWNER_NAME`` from the ``ray.io/originated-from-*`` labels), on the head
  ``RAY_DASHBOARD_ADDRESS`` (unless given), then the user's env (its storage backend settings);
  the Ray token env when token auth is on, because it reads the dashboard;
* the Ray container: Ray events turned on and exported to the collector's port (five env vars,
  each unless already set);
* both share ``/tmp/ray`` through the ``ray-logs`` emptyDir (added by the Pod builder).

There is no history server object: the server itself is deployed apart from the operator.
"""

from __future__ import annotations

import copy
from typing import Any

from controllers import constants as C
from controllers.common import cluster as common
from controllers.raycluster.options import RayClusterOptions

__all__ = ["build_collector", "collector_index", "collector_options", "set_ray_event_env"]

_EXPOSABLE_EVENT_TYPES = ",".join(
    (
        "TASK_DEFINITION_EVENT",
        "TASK_LIFECYCLE_EVENT",
        "ACTOR_TASK_DEFINITION_EVENT",
        "TASK_PROFILE_EVENT",
        "DRIVER_JOB_DEFINITION_EVENT",
        "DRIVER_JOB_LIFECYCLE_EVENT",
        "ACTOR_DEFINITION_EVENT",
        "ACTOR_LIFECYCLE_EVENT",
        "NODE_DEFINITION_EVENT",
        "NODE_LIFECYCLE_EVENT",
    )
)
_RAY_EVENT_ENV = (
    ("RAY_enable_ray_event", "true"),
    ("RAY_enable_core_worker_ray_event_to_aggregator", "true"),
    (
        "RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR",
        f"http://localhost:{C.COLLECTOR_EVENTS_PORT}/v1/events",
    ),
    ("RAY_DASHBOARD_AGGREGATOR_AGENT_EXPOSABLE_EVENT_TYPES", _EXPOSABLE_EVENT_TYPES),
    ("RAY_DASHBOARD_AGGREGATOR_AGENT_PUBLISHER_HTTP_ENDPOINT_EXPOSABLE_EVENT_TYPES", _EXPOSABLE_EVENT_TYPES),
)
_DEFAULT_RESOURCES = {
    "limits": {"cpu": "200m", "memory": "256Mi"},
    "requests": {"cpu": "50m", "memory": "64Mi"},
}


def collector_options(cluster: dict[str, Any], opts: RayClusterOptions) -> dict[str, Any] | None:
    """The collector settings when the gate is on and they are given, else None."""
    if not opts.gates.history_server:
        return None
    options: dict[str, Any] | None = (common.spec_of(cluster).get("historyServerOptions") or {}).get(
        "collectorOptions"
    )
    return options


def build_collector(
    options: dict[str, Any], node_type: str, cluster: dict[str, Any], fqdn: str
) -> dict[str, Any]:
    meta = cluster["metadata"]
    env: list[dict[str, Any]] = [
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": C.RAY_CLUSTER_NAME, "value": meta["name"]},
        {"name": "RAY_CLUSTER_NAMESPACE", "value": meta["namespace"]},
        {"name": "RAY_ROLE", "value": "Head" if node_type == C.NODE_TYPE_HEAD else "Worker"},
        {"name": "EVENTS_PORT", "value": C.COLLECTOR_EVENTS_PORT},
    ]
    if fqdn:
        env.append({"name": C.FQ_RAY_IP, "value": fqdn})
    labels = meta.get("labels") or {}
    for env_name, label in (
        ("OWNER_KIND", C.RAY_ORIGINATED_FROM_CRD_LABEL_KEY),
        ("OWNER_NAME", C.RAY_ORIGINATED_FROM_CR_NAME_LABEL_KEY),
    ):
        if labels.get(label):
            env.append({"name": env_name, "value": labels[label]})
    user_env = copy.deepcopy(list(options.get("env") or []))
    if node_type == C.NODE_TYPE_HEAD and not any(e.get("name") == "RAY_DASHBOARD_ADDRESS" for e in user_env):
        env.append({"name": "RAY_DASHBOARD_ADDRESS", "value": f"http://localhost:{C.DEFAULT_DASHBOARD_PORT}"})
    return {
        "name": C.COLLECTOR_CONTAINER_NAME,
        "image": options.get("image") or "",
        "imagePullPolicy": options.get("imagePullPolicy") or "IfNotPresent",
        "resources": copy.deepcopy(
            _DEFAULT_RESOURCES if options.get("resources") is None else options["resources"]
        ),
        "env": env + user_env,
    }


def collector_index(containers: list[dict[str, Any]], opts: RayClusterOptions) -> int | None:
    """Where the collector is among a Pod's containers (the gate on), as KubeRay finds it: by name."""
    if not opts.gates.history_server:
        return None
    for i, container in enumerate(containers):
        if container.get("name") == C.COLLECTOR_CONTAINER_NAME:
            return i
    return None


def set_ray_event_env(ray: dict[str, Any]) -> None:
    """Ray events on and exported to the collector (each variable only where not already set)."""
    env = ray.setdefault("env", [])
    present = {e.get("name") for e in env}
    for name, value in _RAY_EVENT_ENV:
        if name not in present:
            env.append({"name": name, "value": value})
