"""The default RBAC policy kube-apiserver creates at start-up (``bootstrappolicy``), the part envtest needs.

With RBAC on, kube-apiserver's post-start hook creates ``cluster-admin`` (bound to
``system:masters``) and the roles every authenticated user holds: discovery and version paths
(``system:discovery``, ``system:public-info-viewer``, the latter also for anonymous requests) and
self access reviews (``system:basic-user``). Without them a ServiceAccount could not even read
``/apis``, so a controller's RESTMapper would fail before its first request.
"""

from __future__ import annotations

from typing import Any

__all__ = ["bootstrap_cluster_role_bindings", "bootstrap_cluster_roles"]

_META = {
    "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
}
_API = "rbac.authorization.k8s.io/v1"

_CLUSTER_ROLES: dict[str, list[dict[str, Any]]] = {
    "cluster-admin": [
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"nonResourceURLs": ["*"], "verbs": ["*"]},
    ],
    "system:discovery": [
        {
            "nonResourceURLs": [
                "/api",
                "/api/*",
                "/apis",
                "/apis/*",
                "/healthz",
                "/livez",
                "/openapi",
                "/openapi/*",
                "/readyz",
                "/version",
                "/version/",
            ],
            "verbs": ["get"],
        }
    ],
    "system:basic-user": [
        {
            "apiGroups": ["authorization.k8s.io"],
            "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
            "verbs": ["create"],
        },
        {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"]},
    ],
    "system:public-info-viewer": [
        {"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"], "verbs": ["get"]}
    ],
}
_BINDINGS: dict[str, tuple[str, ...]] = {
    "cluster-admin": ("system:masters",),
    "system:discovery": ("system:authenticated",),
    "system:basic-user": ("system:authenticated",),
    "system:public-info-viewer": ("system:authenticated", "system:unauthenticated"),
}


def _meta(name: str) -> dict[str, Any]:
    return {"name": name, "annotations": dict(_META["annotations"]), "labels": dict(_META["labels"])}


def bootstrap_cluster_roles() -> list[dict[str, Any]]:
    return [
        {"apiVersion": _API, "kind": "ClusterRole", "metadata": _meta(name), "rules": rules}
        for name, rules in _CLUSTER_ROLES.items()
    ]


def bootstrap_cluster_role_bindings() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": _API,
            "kind": "ClusterRoleBinding",
            "metadata": _meta(name),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g} for g in groups
            ],
        }
        for name, groups in _BINDINGS.items()
    ]
