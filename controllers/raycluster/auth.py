"""Ray token authentication from ``spec.authOptions``, as KubeRay v1.7 wires it into Pods.

``mode: token`` turns on Ray's token auth (Ray >= 2.52) in two ways:

* a shared token: every Ray container (and the autoscaler and ``wait-gcs-ready``) gets
  ``RAY_AUTH_MODE=token`` and ``RAY_AUTH_TOKEN`` from the Secret ``authOptions.secretName`` or,
  by default, the Secret named after the cluster that the operator generates (key
  ``auth_token``, 32 random bytes base64-encoded);
* Kubernetes token auth (``enableK8sTokenAuth``): ``RAY_ENABLE_K8S_TOKEN_AUTH=true`` and a
  projected ServiceAccount token mounted at ``/var/run/secrets/ray.io/serviceaccount``, so no
  Secret exists at all.

The names and paths are KubeRay's, so a cluster created by either operator keeps working (and
keeps its hash) when the other takes over.
"""

from __future__ import annotations

import base64
import secrets
from typing import Any

from controllers import constants as C
from controllers.common import cluster as common
from controllers.common.objects import new_child
from kuberay_py.client.resources import SECRETS

__all__ = [
    "AUTH_TOKEN_SECRET_KEY",
    "RAY_TOKEN_MOUNT_PATH",
    "RAY_TOKEN_VOLUME",
    "auth_enabled",
    "auth_secret_name",
    "build_auth_secret",
    "configure_token_auth",
    "generates_auth_secret",
    "k8s_token_auth",
    "set_token_auth_env",
]

AUTH_TOKEN_SECRET_KEY = "auth_token"
RAY_TOKEN_VOLUME = "ray-token"
RAY_TOKEN_MOUNT_PATH = "/var/run/secrets/ray.io/serviceaccount"
RAY_AUTH_MODE = "RAY_AUTH_MODE"
RAY_AUTH_TOKEN = "RAY_AUTH_TOKEN"
RAY_ENABLE_K8S_TOKEN_AUTH = "RAY_ENABLE_K8S_TOKEN_AUTH"
_TOKEN_BYTES = 32


def _options(cluster: dict[str, Any]) -> dict[str, Any]:
    options = common.spec_of(cluster).get("authOptions")
    return options if isinstance(options, dict) else {}


def auth_enabled(cluster: dict[str, Any]) -> bool:
    return _options(cluster).get("mode") == "token"


def k8s_token_auth(cluster: dict[str, Any]) -> bool:
    return auth_enabled(cluster) and _options(cluster).get("enableK8sTokenAuth") is True


def auth_secret_name(cluster: dict[str, Any]) -> str:
    """``authOptions.secretName``, else the cluster's own (generated) Secret."""
    return str(_options(cluster).get("secretName") or common.check_name(cluster["metadata"]["name"]))


def generates_auth_secret(cluster: dict[str, Any]) -> bool:
    """The operator owns the token Secret only when the user named none and K8s auth is off."""
    return auth_enabled(cluster) and not k8s_token_auth(cluster) and not _options(cluster).get("secretName")


def _has_env(container: dict[str, Any], name: str) -> bool:
    return any(e.get("name") == name for e in container.get("env") or [])


def set_token_auth_env(container: dict[str, Any], cluster: dict[str, Any]) -> None:
    """KubeRay's SetContainerTokenAuthEnvVars: what the user already set is left alone."""
    env = container.setdefault("env", [])
    if not _has_env(container, RAY_AUTH_MODE):
        env.append({"name": RAY_AUTH_MODE, "value": "token"})
    if k8s_token_auth(cluster):
        if not _has_env(container, RAY_ENABLE_K8S_TOKEN_AUTH):
            env.append({"name": RAY_ENABLE_K8S_TOKEN_AUTH, "value": "true"})
        mounts = container.setdefault("volumeMounts", [])
        if not any(m.get("name") == RAY_TOKEN_VOLUME for m in mounts):
            mounts.append({"name": RAY_TOKEN_VOLUME, "mountPath": RAY_TOKEN_MOUNT_PATH, "readOnly": True})
        return
    if not _has_env(container, RAY_AUTH_TOKEN):
        ref = {"name": auth_secret_name(cluster), "key": AUTH_TOKEN_SECRET_KEY}
        env.append({"name": RAY_AUTH_TOKEN, "valueFrom": {"secretKeyRef": ref}})


def configure_token_auth(pod_spec: dict[str, Any], ray: dict[str, Any], cluster: dict[str, Any]) -> None:
    """The Ray container, the projected token volume (K8s auth) and ``wait-gcs-ready``."""
    set_token_auth_env(ray, cluster)
    if k8s_token_auth(cluster):
        volumes = pod_spec.setdefault("volumes", [])
        if not any(v.get("name") == RAY_TOKEN_VOLUME for v in volumes):
            projected = {"sources": [{"serviceAccountToken": {"path": "token"}}]}
            volumes.append({"name": RAY_TOKEN_VOLUME, "projected": projected})
    for init in pod_spec.get("initContainers") or []:
        if init.get("name") == C.WAIT_GCS_READY_INIT_CONTAINER_NAME:
            set_token_auth_env(init, cluster)


def build_auth_secret(cluster: dict[str, Any], token: str | None = None) -> dict[str, Any]:
    """The generated token Secret, owned by the cluster so it goes when the cluster goes."""
    value = token if token is not None else base64.b64encode(secrets.token_bytes(_TOKEN_BYTES)).decode()
    labels = {C.RAY_CLUSTER_LABEL_KEY: cluster["metadata"]["name"]}
    return new_child(
        SECRETS, auth_secret_name(cluster), cluster, labels=labels, type="Opaque",
        stringData={AUTH_TOKEN_SECRET_KEY: value},
    )  # fmt: skip
