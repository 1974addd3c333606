"""``upgradeStrategy: Recreate``: the head Pod's hash decides, a version change only re-stamps."""

from __future__ import annotations

from typing import Any

from controllers import constants as C
from controllers.spechash import recreate_hash
from kuberay_py.client import Client
from kuberay_py.client.resources import PODS
from tests.integration.raycluster.conftest import (
    Operator,
    head_pods,
    list_pods,
    sample_cluster,
)
from tests.live import update_live
from tests.polling import consistently, eventually

RC = C.RAYCLUSTERS


async def _uids(client: Client, ns: str, name: str) -> set[str]:
    return {p["metadata"]["uid"] for p in await list_pods(client, ns, **{C.RAY_CLUSTER_LABEL_KEY: name})}


async def _all_pods(client: Client, ns: str, name: str, n: int) -> set[str] | None:
    uids = await _uids(client, ns, name)
    return uids if len(uids) == n else None


async def _head_annotations(client: Client, ns: str, name: str) -> dict[str, Any] | None:
    heads = await head_pods(client, ns, name)
    return dict(heads[0]["metadata"].get("annotations") or {}) if len(heads) == 1 else None


async def test_recreate_restamps_on_a_version_change_and_recreates_on_a_spec_change(
    operator: Operator, rc_client: Client, rc_namespace: str
) -> None:
    ns, name = rc_namespace, "recreate"
    body = sample_cluster(name, ns, replicas=2)
    body["spec"]["upgradeStrategy"] = {"type": "Recreate"}
    await rc_client.create(RC, body, ns)
    first = await eventually(lambda: _all_pods(rc_client, ns, name, 3), "head and 2 workers")
    cluster = await rc_client.get(RC, name, ns)
    head = (await head_pods(rc_client, ns, name))[0]
    assert head["metadata"]["annotations"][C.UPGRADE_STRATEGY_RECREATE_HASH_KEY] == recreate_hash(
        cluster["spec"]
    )

    # Another operator version stamped the head (its encoder may hash differently): re-stamp only.
    stale = {C.KUBERAY_VERSION_KEY: "v1.6.0", C.UPGRADE_STRATEGY_RECREATE_HASH_KEY: "0" * 32}
    await rc_client.patch(PODS, head["metadata"]["name"], {"metadata": {"annotations": stale}}, ns)
    await rc_client.patch(RC, name, {"metadata": {"annotations": {"nudge": "1"}}}, ns)

    async def restamped() -> bool:
        annotations = await _head_annotations(rc_client, ns, name) or {}
        return annotations.get(C.KUBERAY_VERSION_KEY) == C.KUBERAY_VERSION and annotations.get(
            C.UPGRADE_STRATEGY_RECREATE_HASH_KEY
        ) == recreate_hash(cluster["spec"])

    await eventually(restamped, "the head re-stamped")
    await consistently(lambda: _same(rc_client, ns, name, first), "the same Pods", 0.5)

    # A Pod-spec change under Recreate replaces every Pod, head included.
    cluster = await update_live(rc_client, RC, name, ns, _new_worker_image)

    async def replaced() -> set[str] | None:
        uids = await _all_pods(rc_client, ns, name, 3)
        return uids if uids and not uids & first else None

    await eventually(replaced, "three new Pods")
    cluster = await rc_client.get(RC, name, ns)
    annotations = await _head_annotations(rc_client, ns, name) or {}
    assert annotations[C.UPGRADE_STRATEGY_RECREATE_HASH_KEY] == recreate_hash(cluster["spec"])


def _new_worker_image(cluster: dict[str, Any]) -> None:
    cluster["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["image"] = (
        "rayproject/ray:2.53.0"
    )


async def _same(client: Client, ns: str, name: str, uids: set[str]) -> bool:
    return await _uids(client, ns, name) == uids


async def test_without_recreate_a_spec_change_keeps_the_pods(
    operator: Operator, rc_client: Client, rc_namespace: str
) -> None:
    ns, name = rc_namespace, "no-recreate"
    await rc_client.create(RC, sample_cluster(name, ns, replicas=1), ns)
    first = await eventually(lambda: _all_pods(rc_client, ns, name, 2), "head and worker")
    await update_live(rc_client, RC, name, ns, _new_worker_image)
    await consistently(lambda: _same(rc_client, ns, name, first), "the same Pods", 0.5)
