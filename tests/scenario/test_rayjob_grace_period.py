"""RAYJOB_DEPLOYMENT_STATUS_TRANSITION_GRACE_PERIOD_SECONDS end to end: Ray's job ends but the
K8sJobMode submitter never exits (the case KubeRay's grace period exists for: a stuck ``ray job
submit``), so the RayJob would stay Running; once the grace period after ``rayJobInfo.endTime`` is
over it goes Complete (Failed when Ray says FAILED) with KubeRay's reason and message.

The submitter here is a user template that only sleeps (the simulator runs it until stopped) and
the Ray job is submitted straight into the fake head's job table under the RayJob's ``jobId``, as
a stuck submitter would have done before hanging. Its own operator with a 1 s grace period.
"""

from __future__ import annotations

import pytest

from controllers.rayjob.options import RayJobOptions
from controllers.rayjob.running import GRACE_PERIOD_MESSAGE, GRACE_PERIOD_REASON
from kuberay_py.client.resources import JOBS
from tests.rayjob_harness import job_scenario, rayjob

STUCK_SUBMITTER = {
    "spec": {
        "restartPolicy": "Never",
        "containers": [{"name": "stuck", "image": "rayproject/ray:2.52.0", "command": ["sleep", "100000"]}],
    }
}


@pytest.mark.parametrize(
    ("entrypoint", "ray", "state"), [("echo done", "SUCCEEDED", "Complete"), ("exit 3", "FAILED", "Failed")]
)
async def test_a_stuck_submitter_is_given_up_after_the_grace_period(
    entrypoint: str, ray: str, state: str
) -> None:
    options = RayJobOptions(poll_min=0.2, poll_max=0.5, transition_grace_period=1.0)
    async with job_scenario(options) as sc:
        await sc.create(rayjob("stuck", submitterPodTemplate=STUCK_SUBMITTER))
        running = await sc.until("stuck", {"jobDeploymentStatus": "Running"})
        st = running["status"]
        sc.jobs_of(st["rayClusterName"]).submit({"entrypoint": entrypoint, "submission_id": st["jobId"]})
        # Ray's terminal status is read and persisted while the submitter still runs ...
        seen = await sc.until("stuck", {"jobStatus": ray})
        assert seen["status"]["rayJobInfo"]["endTime"]
        # ... and the grace period ends the wait.
        done = await sc.until("stuck", {"jobDeploymentStatus": state})
        st = done["status"]
        assert (st["reason"], st["message"], st["jobStatus"]) == (
            GRACE_PERIOD_REASON,
            GRACE_PERIOD_MESSAGE,
            ray,
        )
        submitter = await sc.client.get(JOBS, "stuck", sc.namespace)
        assert not (submitter.get("status") or {}).get("conditions"), "the submitter never finished"
