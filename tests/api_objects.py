"""Reading objects the operator creates, shared by the integration suites.

``get_or_none`` is what ``eventually`` polls while the operator has still to create an object;
``refused`` is the error a write that must fail failed with; ``dry_run_error`` is how a test
finds that a webhook configuration it installed is in effect;
``controller_refs`` is the ``ownerReferences`` every child of a RayCluster carries (KubeRay sets
them with controller-runtime's ``SetControllerReference``), written out once.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import pytest

from kuberay_py.client import ApiError, Client, NotFound, Resource
from kuberay_py.client.resources import PODS

__all__ = ["controller_refs", "dry_run_error", "get_or_none", "make_pod", "refused"]


async def get_or_none(client: Client, res: Resource, name: str, ns: str) -> dict[str, Any] | None:
    try:
        obj: dict[str, Any] = await client.get(res, name, ns)
    except NotFound:
        return None
    return obj


async def refused(call: Awaitable[Any]) -> ApiError:
    """The API error ``call`` fails with (the test fails if it succeeds)."""
    with pytest.raises(ApiError) as info:
        await call
    return info.value


async def dry_run_error(client: Client, res: Resource, body: dict[str, Any], ns: str) -> ApiError | None:
    """The error a dry-run create of ``body`` gets, or None when it is admitted. kube-apiserver
    loads webhook configurations through an informer, so a test polls this after installing one
    until the webhook is seen to answer."""
    try:
        await client.create(res, body, ns, dry_run=True)
    except ApiError as err:
        return err
    return None


def controller_refs(owner: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``ownerReferences`` of an object ``owner`` (a stored RayCluster) controls."""
    meta = owner["metadata"]
    return [
        {
            "apiVersion": owner["apiVersion"],
            "kind": owner["kind"],
            "name": meta["name"],
            "uid": meta["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


async def make_pod(client: Client, namespace: str, ip: str | None, *, name: str = "head") -> None:
    """A Pod no kubelet runs, with ``ip`` as its address in status (as a kubelet would report it),
    for what reads a Pod's IP: services/proxy's targetRef check, pods/proxy, webhook Endpoints."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]},
    }
    created = await client.create(PODS, pod, namespace)
    if ip is not None:
        created["status"] = {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}
        await client.update_status(PODS, created)
