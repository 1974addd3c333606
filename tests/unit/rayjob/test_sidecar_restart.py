"""The SidecarSubmitterRestart gate (alpha, off by default as in KubeRay v1.7.0): what the
operator writes into the head Pod's submitter container, and how it reads that container's
restarts."""

from __future__ import annotations

from typing import Any, cast

import pytest

from controllers.common.scope import Deps
from controllers.rayjob import builders
from controllers.rayjob.context import JobContext
from controllers.rayjob.memory import JobMemo
from controllers.rayjob.options import RayJobOptions
from controllers.rayjob.running import submitter_outcome
from kuberay_py.clock import FakeClock
from tests.rayjob_harness import rayjob

LOCAL = "http://127.0.0.1:8265"


def sidecar_job(**spec: Any) -> dict[str, Any]:
    doc = rayjob("rj", "python /home/ray/samples/sample_code.py", submissionMode="SidecarMode", **spec)
    doc["metadata"].update(namespace="default", uid="u-1")
    return doc


def submitter(manifest: dict[str, Any]) -> dict[str, Any]:
    containers = manifest["spec"]["headGroupSpec"]["template"]["spec"]["containers"]
    (found,) = [c for c in containers if c["name"] == builders.SUBMITTER_CONTAINER]
    return dict(found)


def test_gate_off_is_kuberays_one_shot_sidecar() -> None:
    manifest = builders.cluster_manifest(sidecar_job(), "rj-abcde", "rj-xyz12")
    container = submitter(manifest)
    assert "restartPolicy" not in container
    assert manifest["spec"]["headGroupSpec"]["template"]["spec"]["restartPolicy"] == "Never"
    script = container["args"][0]
    assert "ray job status" not in script and "--no-wait" not in script and "ray job logs" not in script


def test_gate_on_restarts_only_the_submitter_and_its_script_is_re_entrant() -> None:
    manifest = builders.cluster_manifest(sidecar_job(), "rj-abcde", "rj-xyz12", sidecar_restart=True)
    container = submitter(manifest)
    assert container["restartPolicy"] == "OnFailure"
    assert manifest["spec"]["headGroupSpec"]["template"]["spec"]["restartPolicy"] == "Never"
    script = container["args"][0]
    health = "http://localhost:8265/api/gcs_healthz"
    assert script.startswith(f"until python -c \"import urllib.request; r=urllib.request.urlopen('{health}'")
    assert (
        f"if ! ray job status --address {LOCAL} rj-xyz12 >/dev/null 2>&1 ; then "
        f"ray job submit --address {LOCAL} --no-wait --submission-id rj-xyz12 -- "
        "python /home/ray/samples/sample_code.py ; fi ; "
        f"ray job logs --address {LOCAL} --follow rj-xyz12"
    ) in script


def test_k8s_job_mode_does_not_depend_on_the_gate() -> None:
    doc = rayjob("rj", "echo")
    doc["metadata"].update(namespace="default", uid="u-1")
    on = builders.cluster_manifest(doc, "rj-abcde", "rj-xyz12", sidecar_restart=True)
    off = builders.cluster_manifest(doc, "rj-abcde", "rj-xyz12")
    assert on == off


class HeadCache:
    def __init__(self, statuses: list[dict[str, Any]]) -> None:
        self.pod = {"metadata": {"name": "rj-abcde-head"}, "status": {"containerStatuses": statuses}}

    def list(self, res: Any, namespace: str | None = None, **_: Any) -> list[dict[str, Any]]:
        return [self.pod]


def outcome(status: dict[str, Any], *, gate: bool = True, **spec: Any) -> tuple[Any, Any, bool]:
    job = sidecar_job(**spec)
    ctx = JobContext(
        deps=Deps(
            cast(Any, None),
            cast(Any, HeadCache([{"name": builders.SUBMITTER_CONTAINER, **status}])),
            cast(Any, None),
            FakeClock(),
            RayJobOptions(sidecar_submitter_restart=gate),
        ),
        dashboards=cast(Any, None),
        memo=JobMemo("u-1"),
        job=job,
        status={"rayClusterName": "rj-abcde", "jobDeploymentStatus": "Running"},
    )
    return submitter_outcome(ctx)


FAILED_NOW = {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": "2026-01-01T00:00:00Z"}}
FAILED_BEFORE = {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": "2025-12-31T23:59:00Z"}}
RUNNING = {"running": {"startedAt": "2026-01-01T00:00:01Z"}}


def test_gate_off_a_failed_submitter_fails_the_job_at_once() -> None:
    _, failure, _ = outcome({"state": FAILED_NOW, "restartCount": 0}, gate=False)
    assert failure is not None and failure["reason"] == "SubmitterFailed"


@pytest.mark.parametrize(
    "status",
    [
        {"state": FAILED_NOW, "restartCount": 0},  # first failure: the kubelet will restart it
        {"state": RUNNING, "lastState": FAILED_BEFORE, "restartCount": 1},
        {"state": FAILED_NOW, "lastState": FAILED_BEFORE, "restartCount": 1},
        {"state": {"terminated": {"exitCode": 0}}, "lastState": FAILED_BEFORE, "restartCount": 5},
    ],
)
def test_gate_on_restarts_below_the_backoff_limit_are_not_failures(status: dict[str, Any]) -> None:
    _, failure, exists = outcome(status)
    assert failure is None and exists


def test_gate_on_the_backoff_limit_of_restarts_fails_the_job() -> None:
    finished, failure, _ = outcome({"state": FAILED_NOW, "lastState": FAILED_BEFORE, "restartCount": 2})
    assert failure == {
        "reason": "SubmitterFailed",
        "message": "Ray head pod submitter container ray-job-submitter terminated after exceeding the "
        "maximum restart count",
    }
    assert finished is not None
    # submitterConfig.backoffLimit moves the limit.
    _, failure, _ = outcome(
        {"state": RUNNING, "lastState": FAILED_BEFORE, "restartCount": 2}, submitterConfig={"backoffLimit": 3}
    )
    assert failure is None
    _, failure, _ = outcome(
        {"state": RUNNING, "lastState": FAILED_BEFORE, "restartCount": 3}, submitterConfig={"backoffLimit": 3}
    )
    assert failure is not None


def test_gate_on_a_running_submitter_has_not_finished() -> None:
    finished, _, _ = outcome({"state": RUNNING, "lastState": FAILED_BEFORE, "restartCount": 1})
    assert finished is None
