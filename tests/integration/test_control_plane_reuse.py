"""A reused real control plane shows the next Environment what a fresh one would.

The test session shares etcd + kube-apiserver between Environments (``kuberay_py.envtest.reuse``);
everything a test leaves behind must be gone for the next one: namespaces and what is in them
(also objects held by a finalizer, which a real cluster without kube-controller-manager never
deletes), cluster-scoped objects, CRDs the next Environment does not install (their group leaves
discovery), custom resources of the CRDs it does install, and bootstrap objects a test deleted.
Real mode only: the built-in server has no control plane to reuse.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from controllers.constants import RAYCLUSTERS
from kuberay_py.client import Client
from kuberay_py.client.resources import CLUSTERROLES, CONFIGMAPS, CRDS, NAMESPACES, Resource
from kuberay_py.envtest import Environment, uses_real_apiserver
from kuberay_py.envtest.reuse import ControlPlanePool

pytestmark = pytest.mark.skipif(
    not uses_real_apiserver(), reason="needs a real etcd + kube-apiserver (KUBEBUILDER_ASSETS)"
)

CRD_DIR = Path(__file__).resolve().parents[2] / "config" / "crd" / "bases"
SYSTEM_NAMESPACES = {"default", "kube-node-lease", "kube-public", "kube-system"}


def _raycluster(name: str) -> dict[str, object]:
    container = {"name": "ray-head", "image": "rayproject/ray:2.46.0"}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [container]}}}},
    }


async def _names(client: Client, res: Resource, ns: str | None = None) -> set[str]:
    return {i["metadata"]["name"] for i in (await client.list(res, ns))["items"]}


async def test_the_next_environment_sees_what_a_fresh_control_plane_shows(own_pool: ControlPlanePool) -> None:
    async with Environment([str(CRD_DIR)]) as first, first.new_client() as client:
        url = first.url
        ns = await first.create_namespace()
        await client.create(
            CONFIGMAPS, {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}, ns
        )
        await client.create(RAYCLUSTERS, _raycluster("left-behind"), ns)
        await client.create(CLUSTERROLES, {"metadata": {"name": "left-behind"}, "rules": []})
        await client.delete(CLUSTERROLES, "view")  # a bootstrap object, which the reset puts back
        await client.delete(CONFIGMAPS, "held", ns)  # terminating: the finalizer holds it

    async with Environment() as bare, bare.new_client() as client:
        assert bare.url == url, "the control plane was reused"
        assert await _names(client, NAMESPACES) == SYSTEM_NAMESPACES
        assert await _names(client, CRDS) == set(), "CRDs nobody installs are gone"
        groups = {g["name"] for g in (await client.request("GET", "/apis"))["groups"]}
        assert "ray.io" not in groups
        roles = await _names(client, CLUSTERROLES)
        assert "left-behind" not in roles and "view" in roles

    async with Environment([str(CRD_DIR)]) as again, again.new_client() as client:
        assert again.url == url
        assert (await client.list(RAYCLUSTERS))["items"] == []
        fresh = await again.create_namespace()
        created = await client.create(RAYCLUSTERS, _raycluster("new"), fresh)
        assert created["metadata"]["name"] == "new"

    assert (own_pool.started, own_pool.reused) == (1, 2)


async def test_closing_the_pool_stops_its_control_planes(own_pool: ControlPlanePool) -> None:
    async with Environment() as env:
        plane = env.control_plane
        assert plane is not None
        pids = plane.pids
    assert pids, "etcd and kube-apiserver run while the plane waits for its next user"
    for pid in pids:
        os.kill(pid, 0)  # still there: raises ProcessLookupError otherwise
    await own_pool.close()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
