from typing import Any

from controllers.cli.progress import is_ready, summary


def cluster(**status: Any) -> dict[str, Any]:
    return {"kind": "RayCluster", "metadata": {"name": "rc"}, "status": status}


def service(ready: str | None, reason: str = "", **status: Any) -> dict[str, Any]:
    conditions = [] if ready is None else [{"type": "Ready", "status": ready, "reason": reason}]
    return {"kind": "RayService", "metadata": {"name": "svc"}, "status": {"conditions": conditions, **status}}


def test_raycluster_is_ready_only_in_state_ready() -> None:
    assert is_ready(cluster(state="ready"))
    assert not is_ready(cluster(state="suspended"))
    assert not is_ready(cluster())
    assert not is_ready({"kind": "RayCluster", "metadata": {"name": "rc"}})


def test_rayservice_is_ready_on_kuberays_ready_condition() -> None:
    assert is_ready(service("True", "NonZeroServeEndpoints"))
    assert not is_ready(service("False", "ZeroServeEndpoints"))
    assert not is_ready(service(None))


def test_other_kinds_are_ready_once_applied() -> None:
    assert is_ready({"kind": "ConfigMap", "metadata": {"name": "cm"}})


def test_summaries_say_what_is_pending() -> None:
    assert summary(cluster()) == "raycluster/rc: state=pending workers=0/0"
    assert (
        summary(cluster(state="ready", readyWorkerReplicas=2, desiredWorkerReplicas=3, reason="x"))
        == "raycluster/rc: state=ready workers=2/3 reason=x"
    )
    assert (
        summary(service(None))
        == "rayservice/svc: ready=Unknown (Initializing) endpoints=0 active=- pending=-"
    )
    assert (
        summary(
            service(
                "True",
                "NonZeroServeEndpoints",
                numServeEndpoints=2,
                activeServiceStatus={"rayClusterName": "a"},
            )
        )
        == "rayservice/svc: ready=True (NonZeroServeEndpoints) endpoints=2 active=a pending=-"
    )


def test_rayjob_is_ready_once_complete() -> None:
    job = {"kind": "RayJob", "metadata": {"name": "rj"}, "status": {"jobDeploymentStatus": "Running"}}
    assert not is_ready(job)
    assert summary(job) == "rayjob/rj: deployment=Running job=- cluster=-"
    job["status"] = {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED", "rayClusterName": "rj-x"}
    assert is_ready(job)
    assert summary(job) == "rayjob/rj: deployment=Complete job=SUCCEEDED cluster=rj-x"
