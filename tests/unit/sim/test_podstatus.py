from kuberay_py.envtest.sim.podstatus import ContainerState, build_status

POD = {
    "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
    "spec": {"containers": [{"name": "ray", "image": "rayproject/ray:2.60.0"}], "readinessGates": []},
    "status": {
        "phase": "Pending",
        "qosClass": "BestEffort",
        "conditions": [{"type": "DisruptionTarget", "status": "True"}],
    },
}


def build(pod: dict, ready: bool, now: str) -> dict:
    c = ContainerState("ray", "rayproject/ray:2.60.0", started_at="2026-01-01T00:00:00Z", ready=ready)
    return build_status(
        pod,
        pod_ip="127.1.0.7",
        host_ip="127.0.0.1",
        start_time="2026-01-01T00:00:00Z",
        containers=[c],
        now=now,
    )


def test_running_status_with_conditions_addresses_and_foreign_conditions_kept() -> None:
    status = build(POD, ready=False, now="t1")
    assert status["phase"] == "Running" and status["qosClass"] == "BestEffort"
    assert status["podIP"] == "127.1.0.7" and status["podIPs"] == [{"ip": "127.1.0.7"}]
    conds = {c["type"]: c for c in status["conditions"]}
    assert conds["Ready"]["status"] == "False" and conds["Ready"]["reason"] == "ContainersNotReady"
    assert conds["PodScheduled"]["status"] == "True"
    assert conds["DisruptionTarget"]["status"] == "True"
    (cs,) = status["containerStatuses"]
    assert cs["ready"] is False and cs["started"] is True and "running" in cs["state"]


def test_unchanged_status_is_identical_and_transition_time_moves_only_on_change() -> None:
    first = build(POD, ready=False, now="t1")
    pod = {**POD, "status": first}
    assert build(pod, ready=False, now="t2") == first
    second = build(pod, ready=True, now="t3")
    conds = {c["type"]: c for c in second["conditions"]}
    assert conds["Ready"]["status"] == "True" and conds["Ready"]["lastTransitionTime"] == "t3"
    assert conds["Initialized"]["lastTransitionTime"] == "t1"


def test_readiness_gate_must_be_true_for_ready() -> None:
    pod = {**POD, "spec": {**POD["spec"], "readinessGates": [{"conditionType": "example.com/gate"}]}}
    conds = {c["type"]: c for c in build(pod, ready=True, now="t")["conditions"]}
    assert conds["ContainersReady"]["status"] == "True"
    assert conds["Ready"]["status"] == "False" and conds["Ready"]["reason"] == "ReadinessGatesNotReady"
