"""The embedded RocksDB GCS store's claim, end to end (gate GCSFaultToleranceEmbeddedStorage).

The operator's claim is created once and owned by the cluster unless ``deletionPolicy: Retain``
(changing the policy moves the owner reference); a changed size is reported, not applied; a
user's ``claimName`` is only looked for; with the gate off the spec is invalid and nothing,
not even the head Pod, is created.
"""

from __future__ import annotations

from typing import Any

import pytest

from controllers import constants as C
from controllers.api.gates import ClusterGates
from kuberay_py.client import Client, NotFound
from kuberay_py.client.resources import EVENTS, PERSISTENTVOLUMECLAIMS, PODS
from tests.integration.raycluster.conftest import sample_cluster
from tests.live import update_live
from tests.polling import eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

ON = ClusterGates(embedded_gcs=True)


def embedded(name: str, ns: str, storage: dict[str, Any] | None = None) -> dict[str, Any]:
    body = sample_cluster(name, ns, replicas=0)
    body["spec"]["gcsFaultToleranceOptions"] = {
        "backend": "rocksdb",
        **({"storage": storage} if storage else {}),
    }
    return body


async def notes(client: Client, ns: str, reason: str) -> list[str]:
    return [e.get("note", "") for e in (await client.list(EVENTS, ns))["items"] if e.get("reason") == reason]


async def set_storage(client: Client, ns: str, name: str, storage: dict[str, Any]) -> None:
    def change(body: dict[str, Any]) -> None:
        body["spec"]["gcsFaultToleranceOptions"]["storage"] = storage

    await update_live(client, C.RAYCLUSTERS, name, ns, change)


async def test_the_claim_is_created_owned_and_released_by_retain(
    start_gated: Any, rc_client: Client, rc_namespace: str
) -> None:
    ns = rc_namespace
    start_gated(ON)
    created = await rc_client.create(C.RAYCLUSTERS, embedded("emb", ns, {"size": "2Gi"}), ns)
    pvc = await eventually(lambda: _claim(rc_client, ns, "emb-gcs-pvc"), "the claim")
    assert pvc["spec"]["resources"]["requests"]["storage"] == "2Gi"
    assert pvc["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert [(r["kind"], r["uid"], r["controller"]) for r in pvc["metadata"]["ownerReferences"]] == [
        ("RayCluster", created["metadata"]["uid"], True)
    ]
    assert await eventually(lambda: notes(rc_client, ns, C.EVENT_CREATED_PVC), "CreatedPVC") == [
        f"Created GCS storage PVC {ns}/emb-gcs-pvc"
    ]
    head = (await eventually(lambda: _pods(rc_client, ns), "the head Pod"))[0]
    assert {"name": "gcs-storage", "persistentVolumeClaim": {"claimName": "emb-gcs-pvc"}} in head["spec"][
        "volumes"
    ]

    # Retain (and a bigger size the claim cannot take in place): owner reference gone, drift told.
    await set_storage(rc_client, ns, "emb", {"size": "5Gi", "deletionPolicy": "Retain"})

    async def released() -> bool:
        pvc = await rc_client.get(PERSISTENTVOLUMECLAIMS, "emb-gcs-pvc", ns)
        return not pvc["metadata"].get("ownerReferences")

    await eventually(released, "the owner reference removed")
    [drift] = await eventually(
        lambda: notes(rc_client, ns, C.EVENT_FAILED_TO_CREATE_PVC), "the drift Warning"
    )
    assert drift == (
        f"GCS storage PVC {ns}/emb-gcs-pvc already exists and cannot be reconfigured in place "
        "(requested size 5Gi != current 2Gi); delete the PVC to recreate it with the new settings"
    )
    pvc = await rc_client.get(PERSISTENTVOLUMECLAIMS, "emb-gcs-pvc", ns)
    assert pvc["spec"]["resources"]["requests"]["storage"] == "2Gi"

    # Back to DeleteWithCluster: owned again.
    await set_storage(rc_client, ns, "emb", {"size": "2Gi", "deletionPolicy": "DeleteWithCluster"})

    async def owned() -> bool:
        pvc = await rc_client.get(PERSISTENTVOLUMECLAIMS, "emb-gcs-pvc", ns)
        return [r["uid"] for r in pvc["metadata"].get("ownerReferences") or []] == [
            created["metadata"]["uid"]
        ]

    await eventually(owned, "the owner reference back")


async def _claim(client: Client, ns: str, name: str) -> dict[str, Any] | None:
    try:
        return await client.get(PERSISTENTVOLUMECLAIMS, name, ns)
    except NotFound:
        return None


async def _pods(client: Client, ns: str) -> list[dict[str, Any]]:
    return list((await client.list(PODS, ns))["items"])


async def test_a_missing_user_claim_is_reported_and_never_created(
    start_gated: Any, rc_client: Client, rc_namespace: str
) -> None:
    ns = rc_namespace
    start_gated(ON)
    await rc_client.create(C.RAYCLUSTERS, embedded("byo", ns, {"claimName": "mine"}), ns)
    [message] = await eventually(lambda: notes(rc_client, ns, C.EVENT_FAILED_TO_CREATE_PVC), "the Warning")
    assert message == (
        f'GcsFaultToleranceOptions.Storage.ClaimName "mine" not found in namespace {ns}; '
        "the head Pod will not start until it exists"
    )
    head = (await eventually(lambda: _pods(rc_client, ns), "the head Pod"))[0]
    assert {"name": "gcs-storage", "persistentVolumeClaim": {"claimName": "mine"}} in head["spec"]["volumes"]
    assert (await rc_client.list(PERSISTENTVOLUMECLAIMS, ns))["items"] == []


async def test_gate_off_the_spec_is_invalid_and_nothing_is_created(
    start_gated: Any, rc_client: Client, rc_namespace: str
) -> None:
    ns = rc_namespace
    start_gated(ClusterGates())
    await rc_client.create(C.RAYCLUSTERS, embedded("off", ns), ns)
    [message] = await eventually(lambda: notes(rc_client, ns, C.EVENT_INVALID_RAYCLUSTER_SPEC), "the Warning")
    assert "requires the GCSFaultToleranceEmbeddedStorage feature gate to be enabled" in message
    assert await _pods(rc_client, ns) == []
    assert (await rc_client.list(PERSISTENTVOLUMECLAIMS, ns))["items"] == []
