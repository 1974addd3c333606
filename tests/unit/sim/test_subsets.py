"""The Endpoints the simulator's endpoints controller computes, checked against upstream's rules."""

from datetime import UTC, datetime
from typing import Any

from kuberay_py.envtest.sim.subsets import (
    HEADLESS_LABEL,
    MAX_CAPACITY,
    TriggerTimeTracker,
    desired_subsets,
    endpoints_labels,
    repack_subsets,
    truncate_subsets,
)


def pod(
    name: str,
    ip: str,
    *,
    ready: bool = True,
    serve_port: int = 8000,
    deleting: bool = False,
    since: str = "2026-01-01T00:00:00Z",
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": {"app": "ray"}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:09Z"
    return {
        "metadata": meta,
        "spec": {
            "nodeName": "sim-node",
            "containers": [{"name": "ray", "ports": [{"name": "serve", "containerPort": serve_port}]}],
        },
        "status": {
            "phase": "Running",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "conditions": [
                {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": since}
            ],
        },
    }


SERVICE: dict[str, Any] = {
    "metadata": {"name": "svc", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
    "spec": {
        "selector": {"app": "ray"},
        "clusterIP": "10.0.0.7",
        "ports": [
            {"name": "serve", "port": 8000, "targetPort": "serve", "protocol": "TCP"},
            {"name": "dashboard", "port": 8265, "targetPort": 8265, "protocol": "TCP"},
        ],
    },
}


def address(name: str, ip: str) -> dict[str, Any]:
    return {
        "ip": ip,
        "nodeName": "sim-node",
        "targetRef": {"kind": "Pod", "namespace": "ns", "name": name, "uid": f"uid-{name}"},
    }


def test_pods_offering_the_same_ports_share_a_subset_and_not_ready_ones_are_listed_apart() -> None:
    pods = [pod("b", "10.244.0.3"), pod("a", "10.244.0.2"), pod("c", "10.244.0.4", ready=False)]
    assert desired_subsets(SERVICE, pods) == [
        {
            "addresses": [address("a", "10.244.0.2"), address("b", "10.244.0.3")],
            "notReadyAddresses": [address("c", "10.244.0.4")],
            "ports": [
                {"name": "dashboard", "port": 8265, "protocol": "TCP"},
                {"name": "serve", "port": 8000, "protocol": "TCP"},
            ],
        }
    ]


def test_a_named_target_port_resolving_differently_makes_another_subset() -> None:
    subsets = desired_subsets(SERVICE, [pod("a", "10.244.0.2"), pod("b", "10.244.0.3", serve_port=9000)])
    by_ports = {tuple(p["port"] for p in s["ports"]): [a["ip"] for a in s["addresses"]] for s in subsets}
    assert by_ports == {
        (8265,): ["10.244.0.2", "10.244.0.3"],
        (8000,): ["10.244.0.2"],
        (9000,): ["10.244.0.3"],
    }


def test_terminating_pods_are_left_out_unless_the_service_publishes_not_ready_addresses() -> None:
    pods = [pod("a", "10.244.0.2"), pod("b", "10.244.0.3", deleting=True, ready=False)]
    assert [a["ip"] for a in desired_subsets(SERVICE, pods)[0]["addresses"]] == ["10.244.0.2"]
    assert "notReadyAddresses" not in desired_subsets(SERVICE, pods)[0]
    publishing = {**SERVICE, "spec": {**SERVICE["spec"], "publishNotReadyAddresses": True}}
    assert [a["ip"] for a in desired_subsets(publishing, pods)[0]["addresses"]] == [
        "10.244.0.2",
        "10.244.0.3",
    ]


def test_a_headless_service_without_ports_lists_addresses_with_hostnames() -> None:
    headless = {**SERVICE, "spec": {"selector": {"app": "ray"}, "clusterIP": "None"}}
    named = pod("a", "10.244.0.2")
    named["spec"].update(hostname="head", subdomain="svc")
    assert desired_subsets(headless, [named]) == [
        {"addresses": [{**address("a", "10.244.0.2"), "hostname": "head"}]}
    ]
    not_headless = {**SERVICE, "spec": {"selector": {"app": "ray"}, "clusterIP": "10.0.0.7"}}
    assert desired_subsets(not_headless, [named]) == []
    assert endpoints_labels(headless) == {HEADLESS_LABEL: ""}
    assert endpoints_labels({**SERVICE, "metadata": {**SERVICE["metadata"], "labels": {"a": "b"}}}) == {
        "a": "b"
    }


def test_not_ready_on_one_port_is_not_ready_on_all() -> None:
    a = address("a", "10.244.0.2")
    port1 = {"name": "x", "port": 1, "protocol": "TCP"}
    port2 = {"name": "y", "port": 2, "protocol": "TCP"}
    repacked = repack_subsets(
        [{"addresses": [a], "ports": [port1]}, {"notReadyAddresses": [a], "ports": [port2]}]
    )
    assert repacked == [{"addresses": [a], "ports": [port1]}, {"notReadyAddresses": [a], "ports": [port2]}]


def test_truncation_keeps_ready_addresses_first() -> None:
    ready = [{"ip": f"10.244.{i // 250}.{i % 250 + 1}"} for i in range(MAX_CAPACITY - 10)]
    not_ready = [{"ip": f"10.245.0.{i + 1}"} for i in range(20)]
    subsets = [
        {"addresses": ready, "notReadyAddresses": not_ready, "ports": [{"port": 1, "protocol": "TCP"}]}
    ]
    assert truncate_subsets(subsets)
    assert (len(subsets[0]["addresses"]), len(subsets[0]["notReadyAddresses"])) == (MAX_CAPACITY - 10, 10)
    assert not truncate_subsets(subsets)


def at(second: int) -> datetime:
    return datetime(2026, 1, 1, 0, 0, second, tzinfo=UTC)


def test_trigger_time_is_the_service_creation_then_the_earliest_new_ready_transition() -> None:
    tracker = TriggerTimeTracker()
    service = {**SERVICE, "metadata": {**SERVICE["metadata"], "creationTimestamp": "2026-01-01T00:00:03Z"}}
    old = pod("a", "10.244.0.2", since="2026-01-01T00:00:01Z")
    assert tracker.compute("ns", service, [old]) == at(3)  # a new Service: its creation
    assert tracker.compute("ns", service, [old]) is None  # nothing changed since
    changed = [
        pod("a", "10.244.0.2", since="2026-01-01T00:00:07Z"),
        pod("b", "10.244.0.3", since="2026-01-01T00:00:05Z"),
    ]
    assert tracker.compute("ns", service, changed) == at(5)
    tracker.forget("ns", "svc")
    assert tracker.compute("ns", service, changed) == at(3)
