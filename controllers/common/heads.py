"""A cluster's head Pod, as every controller that talks to Ray finds and reaches it.

A missing head Pod is a normal state (the cluster is starting, suspended or being recreated), not
an error to retry in a loop (KubeRay #4686): :func:`head_pod` returns None for it, and the
RayCluster or Pod watch wakes the owner when a head appears. The operator dials the head Pod's IP
from the Pod cache (not the head Service's DNS name): that works from outside the cluster network
too (``kuberay-operator run`` on a laptop, the demo) and skips a Service hop. With
``--use-kubernetes-proxy`` it goes through the API server's ``services/proxy`` of the head Service
instead, as KubeRay does then.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from controllers import constants as c
from controllers.common.cache import CacheReader
from controllers.common.cluster import find_container_port, head_service_name
from controllers.common.pods import live_pods
from controllers.ray.dashboard import DashboardClient, DashboardClientFactory
from kuberay_py.client.resources import PODS

__all__ = [
    "TokenSecret",
    "auth_token_source",
    "dashboard_client",
    "dashboard_port",
    "dashboard_url",
    "head_pod",
    "head_token",
    "ray_container",
    "serve_port",
    "token_from_secret",
]


def ray_container(pod: dict[str, Any]) -> dict[str, Any]:
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    container: dict[str, Any] = containers[c.RAY_CONTAINER_INDEX]
    return container


def head_pod(cache: CacheReader, namespace: str, cluster_name: str) -> dict[str, Any] | None:
    """The head Pod of a cluster (the newest non-terminating one if several exist), or None."""
    pods = cache.list(
        PODS,
        namespace,
        labels={c.RAY_CLUSTER_LABEL_KEY: cluster_name, c.RAY_NODE_TYPE_LABEL_KEY: c.NODE_TYPE_HEAD},
    )
    live = live_pods(pods)
    if not live:
        return None
    return max(live, key=lambda p: p["metadata"].get("creationTimestamp") or "")


def serve_port(pod: dict[str, Any]) -> int:
    """The head's own container port named ``serve`` (KubeRay's FindContainerPort, default 8000)."""
    return find_container_port(ray_container(pod), c.SERVING_PORT_NAME, c.DEFAULT_SERVING_PORT)


def dashboard_port(pod: dict[str, Any], cluster: dict[str, Any] | None = None) -> int:
    """The container port named ``dashboard``, else ``rayStartParams["dashboard-port"]``, else 8265."""
    default = c.DEFAULT_DASHBOARD_PORT
    params = (((cluster or {}).get("spec") or {}).get("headGroupSpec") or {}).get("rayStartParams") or {}
    try:
        default = int(params.get("dashboard-port", default))
    except (TypeError, ValueError):
        default = c.DEFAULT_DASHBOARD_PORT
    return find_container_port(ray_container(pod), c.DASHBOARD_PORT_NAME, default)


def auth_token_source(pod: dict[str, Any]) -> tuple[str, str, str] | None:
    """Where the head's Ray token comes from when the Ray container runs with ``RAY_AUTH_MODE=token``.

    ``("value", token, "")`` for a literal ``RAY_AUTH_TOKEN``, ``("secret", name, key)`` for a
    ``secretKeyRef``; None when token auth is off. The dashboard then wants
    ``x-ray-authorization: Bearer <token>``.
    """
    env = {e.get("name"): e for e in ray_container(pod).get("env") or [] if isinstance(e, dict)}
    if str((env.get("RAY_AUTH_MODE") or {}).get("value", "")).lower() != "token":
        return None
    token = env.get("RAY_AUTH_TOKEN") or {}
    if token.get("value"):
        return ("value", str(token["value"]), "")
    ref = (token.get("valueFrom") or {}).get("secretKeyRef") or {}
    if ref.get("name") and ref.get("key"):
        return ("secret", str(ref["name"]), str(ref["key"]))
    return None


def dashboard_url(
    pod: dict[str, Any], cluster: dict[str, Any] | None = None, *, proxy_host: str | None = None
) -> str:
    """``http://<pod IP>:<dashboard port>``, the IP bracketed when it is IPv6.

    With ``proxy_host`` (the API server's base URL) it is KubeRay's proxied address instead:
    ``<host>/api/v1/namespaces/<ns>/services/<head Service>:dashboard/proxy``, the Service named
    as the cluster's ``status.head.serviceName`` says (else as it is generated), its port by name.
    """
    if proxy_host is not None:
        meta = pod.get("metadata") or {}
        namespace = str(meta.get("namespace") or "")
        service = _head_service(pod, cluster)
        return f"{proxy_host}/api/v1/namespaces/{namespace}/services/{service}:{c.DASHBOARD_PORT_NAME}/proxy"
    ip = str((pod.get("status") or {}).get("podIP") or "")
    host = f"[{ip}]" if ":" in ip else ip
    return f"http://{host}:{dashboard_port(pod, cluster)}"


def dashboard_client(
    dashboards: DashboardClientFactory,
    pod: dict[str, Any],
    cluster: dict[str, Any] | None,
    auth_token: str | None,
) -> DashboardClient:
    """A client for this head's dashboard, direct or through the API server as the factory says."""
    return dashboards.client(
        dashboard_url(pod, cluster, proxy_host=dashboards.proxy_host), auth_token=auth_token
    )


def _head_service(pod: dict[str, Any], cluster: dict[str, Any] | None) -> str:
    if cluster is not None:
        named = ((cluster.get("status") or {}).get("head") or {}).get("serviceName")
        return str(named) if named else head_service_name(cluster)
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return head_service_name({"metadata": {"name": labels.get(c.RAY_CLUSTER_LABEL_KEY, "")}})


@dataclass(frozen=True)
class TokenSecret:
    """Where a head's Ray token is kept: key ``key`` of the Secret ``name`` (its namespace's)."""

    name: str
    key: str


def head_token(pod: dict[str, Any]) -> str | TokenSecret | None:
    """The head's Ray token when its env spells it out, where to read it when a Secret holds it,
    or None when token auth is off."""
    source = auth_token_source(pod)
    if source is None:
        return None
    kind, value, key = source
    return value if kind == "value" else TokenSecret(value, key)


def token_from_secret(secret: dict[str, Any], key: str) -> str:
    """The Ray token stored under ``key`` of a Secret; ValueError when the key is missing."""
    encoded = (secret.get("data") or {}).get(key)
    if encoded is None:
        raise ValueError(f"Secret {secret.get('metadata', {}).get('name', '')} has no key {key!r}")
    return base64.b64decode(encoded).decode().strip()
