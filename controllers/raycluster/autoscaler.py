"""The in-tree autoscaler: its sidecar container on the head and its namespaced RBAC.

The autoscaler patches the RayCluster's ``replicas``/``workersToDelete`` and watches Pods, so it
needs a ServiceAccount bound to a Role granting exactly that (KubeRay ``common/rbac.go``).
"""

from __future__ import annotations

import copy
from typing import Any

from controllers import constants as C
from controllers.common import cluster as common
from controllers.raycluster.auth import auth_enabled, set_token_auth_env
from controllers.raycluster.mtls import set_container_tls

__all__ = [
    "autoscaler_container",
    "autoscaler_role",
    "autoscaler_role_binding",
    "autoscaler_service_account",
    "autoscaler_service_account_name",
]

_ARGS = (
    "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)"
)


def autoscaler_service_account_name(cluster: dict[str, Any]) -> str:
    head_spec = ((common.spec_of(cluster).get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}
    return str(head_spec.get("serviceAccountName") or cluster["metadata"]["name"])


def autoscaler_container(
    cluster: dict[str, Any], ray_container: dict[str, Any], *, tls: bool = False
) -> dict[str, Any]:
    options = common.spec_of(cluster).get("autoscalerOptions") or {}
    container: dict[str, Any] = {
        "name": C.AUTOSCALER_CONTAINER_NAME,
        "image": options.get("image") or ray_container.get("image"),
        "imagePullPolicy": options.get("imagePullPolicy") or "IfNotPresent",
        "env": [
            {
                "name": C.RAY_CLUSTER_NAME,
                "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{C.RAY_CLUSTER_LABEL_KEY}']"}},
            },
            {"name": C.RAY_CLUSTER_NAMESPACE, "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": C.RAY_HEAD_POD_NAME, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": C.KUBERAY_CRD_VER, "value": C.KUBERAY_CRD_VERSION},
            {"name": C.KUBERAY_GEN_AUTOSCALER_START_CMD, "value": _ARGS},
        ],
        "command": ["/bin/bash", "-c", "--"],
        "args": [_ARGS],
        "resources": {
            "limits": {"cpu": "500m", "memory": "512Mi"},
            "requests": {"cpu": "500m", "memory": "512Mi"},
        },
    }
    if auth_enabled(cluster):  # before the user's env, as KubeRay merges the overrides last
        set_token_auth_env(container, cluster)
    if tls:  # the autoscaler talks to the GCS too (gate RayClusterMTLS)
        set_container_tls(container)
    if options.get("resources") is not None:
        container["resources"] = copy.deepcopy(options["resources"])
    for key in ("env", "envFrom", "volumeMounts"):
        if options.get(key):
            container.setdefault(key, []).extend(copy.deepcopy(options[key]))
    # A securityContext is copied even when empty (KubeRay copies any non-nil pointer).
    if options.get("securityContext") is not None:
        container["securityContext"] = copy.deepcopy(options["securityContext"])
    for key in ("command", "args"):
        if options.get(key):
            container[key] = copy.deepcopy(options[key])
    return container


def _meta(cluster: dict[str, Any], name: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": cluster["metadata"]["namespace"],
        "labels": {
            C.RAY_CLUSTER_LABEL_KEY: cluster["metadata"]["name"],
            C.KUBERNETES_CREATED_BY_LABEL_KEY: C.COMPONENT_NAME,
            C.KUBERNETES_APPLICATION_NAME_LABEL_KEY: C.APPLICATION_NAME,
        },
        "ownerReferences": [common.controller_ref(cluster)],
    }


def autoscaler_service_account(cluster: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _meta(cluster, autoscaler_service_account_name(cluster)),
    }


def autoscaler_role(cluster: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": _meta(cluster, cluster["metadata"]["name"]),
        "rules": [
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "patch"]},
            {"apiGroups": [""], "resources": ["pods/resize"], "verbs": ["patch"]},
            {"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": ["get", "patch"]},
        ],
    }


def autoscaler_role_binding(cluster: dict[str, Any]) -> dict[str, Any]:
    name = cluster["metadata"]["name"]
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(cluster, name),
        "subjects": [
            {
                "kind": "ServiceAccount",
                "name": autoscaler_service_account_name(cluster),
                "namespace": cluster["metadata"]["namespace"],
            }
        ],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
    }
