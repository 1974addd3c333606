"""``spec.networkPolicy`` end to end: the NetworkPolicy controller behind RayClusterNetworkPolicy.

With the gate on, the policies follow the spec (a group added or removed, the mode changed, the
field removed) and a same-named policy someone else owns is left alone. With the gate off (its
v1.7.0 default) the spec is invalid: one Warning, ``status.reason``, nothing created.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controllers import constants as C
from controllers.api.gates import ClusterGates
from kuberay_py.client import Client
from kuberay_py.client.resources import EVENTS, NETWORKPOLICIES, PODS
from tests.api_objects import controller_refs
from tests.integration.raycluster.conftest import sample_cluster
from tests.live import update_live
from tests.polling import eventually

pytestmark = pytest.mark.asyncio(loop_scope="session")

DNS = {
    "to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}],
    "ports": [{"port": 53, "protocol": "UDP"}],
}


async def policies(client: Client, ns: str) -> dict[str, dict[str, Any]]:
    items = (await client.list(NETWORKPOLICIES, ns))["items"]
    return {p["metadata"]["name"]: p for p in items}


async def events(client: Client, ns: str, reason: str) -> list[str]:
    return [e.get("note", "") for e in (await client.list(EVENTS, ns))["items"] if e.get("reason") == reason]


async def edit(client: Client, ns: str, name: str, change: Any) -> None:
    """``change`` the RayCluster's spec in place (what it returns is ignored)."""

    def on_spec(body: dict[str, Any]) -> None:
        change(body["spec"])

    await update_live(client, C.RAYCLUSTERS, name, ns, on_spec)


async def test_policies_follow_the_spec(start_gated: Any, rc_client: Client, rc_namespace: str) -> None:
    start_gated(ClusterGates(network_policy=True))
    ns = rc_namespace
    body = sample_cluster("np", ns, replicas=1)
    body["spec"]["networkPolicy"] = {"mode": "DenyAll", "worker": {"egressRules": [DNS]}}
    created = await rc_client.create(C.RAYCLUSTERS, body, ns)

    got = await eventually(
        lambda: _names(rc_client, ns, {"np-head", "np-workers-small-group"}), "both policies"
    )
    head = got["np-head"]
    assert head["metadata"]["ownerReferences"] == controller_refs(created)
    assert got["np-workers-small-group"]["spec"]["egress"][1] == DNS
    assert await eventually(lambda: events(rc_client, ns, "CreatedNetworkPolicy"), "the Created event") == [
        f"Created NetworkPolicy {ns}/np-head"
    ]

    # A second group gets its own policy; the mode change rewrites the existing ones.
    def add_group_and_deny_ingress_only(spec: dict[str, Any]) -> None:
        group = copy.deepcopy(spec["workerGroupSpecs"][0])
        group["groupName"] = "big"
        spec["workerGroupSpecs"].append(group)
        spec["networkPolicy"] = {"mode": "DenyAllIngress"}

    await edit(rc_client, ns, "np", add_group_and_deny_ingress_only)

    async def ingress_only() -> dict[str, Any] | None:
        got = await _names(rc_client, ns, {"np-head", "np-workers-small-group", "np-workers-big"})
        if got and all(
            p["spec"]["policyTypes"] == ["Ingress"] and "egress" not in p["spec"] for p in got.values()
        ):
            return got
        return None

    await eventually(ingress_only, "three ingress-only policies")
    assert await eventually(lambda: events(rc_client, ns, "UpdatedNetworkPolicy"), "the Updated event")

    # Removing a group removes its policy.
    await edit(rc_client, ns, "np", lambda spec: spec["workerGroupSpecs"].pop())
    await eventually(
        lambda: _names(rc_client, ns, {"np-head", "np-workers-small-group"}), "the group's policy gone"
    )
    # The event is recorded after the delete, through the recorder's queue: the policy can be gone
    # from a list before its event is written.
    assert await eventually(lambda: events(rc_client, ns, "DeletedNetworkPolicy"), "the Deleted event") == [
        f"Deleted NetworkPolicy {ns}/np-workers-big"
    ]

    # Removing networkPolicy removes every policy of the cluster, and nothing else.
    await edit(rc_client, ns, "np", lambda spec: spec.pop("networkPolicy"))

    async def none_left() -> bool:
        return await policies(rc_client, ns) == {}

    await eventually(none_left, "no policies left")
    assert (await rc_client.list(PODS, ns))["items"], "the cluster itself keeps running"


async def _names(client: Client, ns: str, names: set[str]) -> dict[str, dict[str, Any]] | None:
    got = await policies(client, ns)
    return got if set(got) == names else None


async def test_a_same_named_policy_of_someone_else_is_left_alone(
    start_gated: Any, rc_client: Client, rc_namespace: str
) -> None:
    ns = rc_namespace
    foreign = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "col-head", "labels": {"team": "infra"}},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
    }
    await rc_client.create(NETWORKPOLICIES, foreign, ns)
    start_gated(ClusterGates(network_policy=True))
    body = sample_cluster("col", ns, replicas=0)
    body["spec"]["networkPolicy"] = {}
    await rc_client.create(C.RAYCLUSTERS, body, ns)

    [message] = await eventually(lambda: events(rc_client, ns, "NetworkPolicyNameCollision"), "the collision")
    assert message.startswith(
        f"NetworkPolicy {ns}/col-head already exists and is not owned by this RayCluster"
    )
    kept = (await policies(rc_client, ns))["col-head"]
    assert kept["spec"] == {"podSelector": {}, "policyTypes": ["Ingress"]}
    assert kept["metadata"]["labels"] == {"team": "infra"}


async def test_gate_off_the_spec_is_invalid_and_nothing_is_created(
    start_gated: Any, rc_client: Client, rc_namespace: str
) -> None:
    ns = rc_namespace
    start_gated(ClusterGates())
    body = sample_cluster("off", ns, replicas=1)
    body["spec"]["networkPolicy"] = {"mode": "DenyAll"}
    await rc_client.create(C.RAYCLUSTERS, body, ns)

    gate = "spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be enabled"
    want = f"The RayCluster spec is invalid {ns}/off: {gate}"  # KubeRay's event
    assert await eventually(
        lambda: events(rc_client, ns, C.EVENT_INVALID_RAYCLUSTER_SPEC), "the Warning"
    ) == [want]

    async def reason() -> str | None:
        status = (await rc_client.get(C.RAYCLUSTERS, "off", ns)).get("status") or {}
        return status.get("reason")

    assert await eventually(reason, "status.reason") == gate
    assert (await rc_client.list(PODS, ns))["items"] == []
    assert await policies(rc_client, ns) == {}
