from typing import Any

from kuberay_py.envtest.sim.slices import MANAGED_BY, desired_slices, slice_labels


def pod(
    name: str,
    ip: str | None,
    *,
    ready: bool = True,
    serve_port: int = 8000,
    deleting: bool = False,
    labels: dict[str, str] | None = None,
    phase: str = "Running",
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": f"uid-{name}",
        "labels": labels or {"app": "ray"},
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    if ip:
        status["podIP"] = ip
    return {
        "metadata": meta,
        "spec": {
            "nodeName": "sim-node",
            "containers": [{"name": "ray", "ports": [{"name": "serve", "containerPort": serve_port}]}],
        },
        "status": status,
    }


SERVICE = {
    "metadata": {"name": "svc", "namespace": "ns", "uid": "svc-uid", "labels": {"team": "a"}},
    "spec": {"selector": {"app": "ray"}, "ports": [{"name": "serve", "port": 8000, "targetPort": "serve"}]},
}


def test_named_target_port_resolves_per_pod_and_groups_by_port_set() -> None:
    slices = desired_slices(SERVICE, [pod("a", "127.1.0.1", serve_port=9000), pod("b", "127.1.0.2")])
    by_port = {ports[0]["port"]: [e["targetRef"]["name"] for e in eps] for ports, eps in slices}
    assert by_port == {9000: ["a"], 8000: ["b"]}
    assert slices[0][0] == [{"name": "serve", "port": 9000, "protocol": "TCP"}]


def test_conditions_follow_readiness_and_termination() -> None:
    ((_, eps),) = desired_slices(
        SERVICE,
        [pod("r", "127.1.0.1"), pod("n", "127.1.0.2", ready=False), pod("t", "127.1.0.3", deleting=True)],
    )
    conds = {e["targetRef"]["name"]: e["conditions"] for e in eps}
    assert conds == {
        "n": {"ready": False, "serving": False, "terminating": False},
        "r": {"ready": True, "serving": True, "terminating": False},
        "t": {"ready": False, "serving": True, "terminating": True},
    }
    r = next(e for e in eps if e["targetRef"]["name"] == "r")
    assert r["addresses"] == ["127.1.0.1"] and r["nodeName"] == "sim-node"
    assert r["targetRef"] == {"kind": "Pod", "namespace": "ns", "name": "r", "uid": "uid-r"}


def test_unaddressed_terminal_and_unselected_pods_are_left_out_with_a_placeholder() -> None:
    pods = [
        pod("noip", None),
        pod("done", "127.1.0.4", phase="Succeeded"),
        pod("other", "127.1.0.5", labels={"app": "x"}),
    ]
    assert desired_slices(SERVICE, pods) == [([], [])]


def test_missing_named_port_drops_only_that_port() -> None:
    svc = {
        **SERVICE,
        "spec": {
            "selector": {"app": "ray"},
            "ports": [
                {"name": "serve", "port": 8000, "targetPort": "serve"},
                {"name": "dash", "port": 8265, "targetPort": "dashboard"},
            ],
        },
    }
    ((ports, eps),) = desired_slices(svc, [pod("a", "127.1.0.1")])
    assert [p["name"] for p in ports] == ["serve"] and len(eps) == 1


def test_more_than_100_endpoints_split_into_slices() -> None:
    slices = desired_slices(SERVICE, [pod(f"p{i:03d}", f"127.1.1.{i + 1}") for i in range(150)])
    assert [len(eps) for _, eps in slices] == [100, 50]


def test_labels_copy_the_service_and_name_the_controller() -> None:
    assert slice_labels(SERVICE) == {
        "team": "a",
        "kubernetes.io/service-name": "svc",
        "endpointslice.kubernetes.io/managed-by": MANAGED_BY,
    }
