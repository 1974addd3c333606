"""Credentials of a ServiceAccount, for running a controller as it would run in a Pod.

The token comes from the TokenRequest subresource (what the kubelet asks for a projected token),
on the built-in server and on a real kube-apiserver alike. The kubeconfig it goes into keeps the
environment's cluster entry (server and CA) but carries only the token: a client certificate
next to it would authenticate first, as the admin, and every RBAC check would pass unseen.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio.client import ApiClient

from .kubeconfig import write_kubeconfig
from .rest import request_json

__all__ = ["request_token", "service_account_kubeconfig_dict"]


async def request_token(
    api: ApiClient,
    namespace: str,
    name: str,
    *,
    expiration_seconds: int = 3600,
    audiences: list[str] | None = None,
) -> str:
    """``POST .../serviceaccounts/NAME/token``; the ServiceAccount must exist (404 otherwise)."""
    spec: dict[str, Any] = {"expirationSeconds": expiration_seconds}
    if audiences:
        spec["audiences"] = audiences
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
    answer = await request_json(
        api, "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", body
    )
    return str(answer["status"]["token"])


def service_account_kubeconfig_dict(admin_kubeconfig: str, token: str, namespace: str) -> dict[str, Any]:
    """The admin kubeconfig's current cluster with a token-only user."""
    doc = yaml.safe_load(Path(admin_kubeconfig).read_text()) or {}
    contexts = {c["name"]: c.get("context") or {} for c in doc.get("contexts") or []}
    context = contexts.get(doc.get("current-context", ""), {})
    clusters = {c["name"]: dict(c.get("cluster") or {}) for c in doc.get("clusters") or []}
    cluster = clusters[context["cluster"]]
    ca = cluster.get("certificate-authority")
    if ca and not os.path.isabs(ca):
        cluster["certificate-authority"] = os.path.join(
            os.path.dirname(os.path.abspath(admin_kubeconfig)), ca
        )
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "envtest", "cluster": cluster}],
        "users": [{"name": "serviceaccount", "user": {"token": token}}],
        "contexts": [
            {
                "name": "serviceaccount",
                "context": {"cluster": "envtest", "user": "serviceaccount", "namespace": namespace},
            }
        ],
        "current-context": "serviceaccount",
        "preferences": {},
    }


def write_service_account_kubeconfig(path: str, admin_kubeconfig: str, token: str, namespace: str) -> str:
    return write_kubeconfig(path, service_account_kubeconfig_dict(admin_kubeconfig, token, namespace))
