"""Small helpers for the conformance suite (raw calls and Status assertions)."""

from __future__ import annotations

import json
from typing import Any

from kubernetes_asyncio.client.rest import ApiException

from kuberay_py.client import Client, NotFound
from kuberay_py.client import resources as r
from tests.polling import eventually


def status_of(exc: ApiException) -> dict[str, Any]:
    """The ``Status`` body of a failed kubernetes_asyncio call."""
    body = exc.body
    if isinstance(body, bytes):
        body = body.decode()
    return json.loads(body) if body else {}


def assert_status(exc: ApiException, code: int, reason: str) -> dict[str, Any]:
    status = status_of(exc)
    assert exc.status == code, (exc.status, status)
    assert status.get("kind") == "Status"
    assert status.get("code") == code
    assert status.get("reason") == reason, status
    return status


def pod(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}], **spec},
    }


def configmap(
    name: str, data: dict[str, str] | None = None, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels or {}},
        "data": data or {},
    }


def job(name: str) -> dict[str, Any]:
    """A batch/v1 Job of one busybox container that never restarts (the smallest valid Job)."""
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36"}]}}
    meta = {"name": name}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": {"template": template}}


async def wait_crd_gone(k8s: Client, name: str) -> None:
    """Wait until the CRD ``name`` is gone: its deletion finishes once apiextensions' finalizer
    has deleted every custom resource, asynchronously on a real kube-apiserver."""

    async def gone() -> bool:
        try:
            await k8s.get(r.CRDS, name)
        except NotFound:
            return True
        return False

    await eventually(gone, f"CRD {name} removed", tolerate=())
