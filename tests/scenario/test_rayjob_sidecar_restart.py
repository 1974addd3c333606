"""SidecarSubmitterRestart on the simulator: a SidecarMode RayJob whose submitter container carries
``restartPolicy: OnFailure`` and KubeRay's re-entrant script (status guard, ``--no-wait``,
``ray job logs --follow``). The fake head drops the first log stream (``ray job logs`` then exits
1 while the job runs on, the case the gate exists for): with the gate the kubelet restarts only the
submitter, which re-attaches without resubmitting, and the RayJob completes. (Without the gate the
same early drop ends the sidecar before the head is ever Ready, KubeRay's SidecarMode trap; the
gate-off failure rule is covered by tests/unit/rayjob/test_sidecar_restart.py.)
"""

from __future__ import annotations

import dataclasses

from controllers.constants import RAYCLUSTERS
from controllers.raysim import RayPodRuntime
from kuberay_py.client.resources import JOBS, PODS
from tests.rayjob_harness import OPTIONS, TIMINGS, job_scenario, rayjob


async def test_gate_on_a_dropped_log_stream_restarts_only_the_submitter() -> None:
    runtime = RayPodRuntime(timings=TIMINGS)
    runtime.log_stream_drops = 1
    options = dataclasses.replace(OPTIONS, sidecar_submitter_restart=True)
    async with job_scenario(options, runtime) as sc:
        client, ns = sc.client, sc.namespace
        # Long enough for the head to turn Ready first: a finished sidecar makes the head unready.
        await sc.create(rayjob("side", "sleep 5", submissionMode="SidecarMode"))
        done = await sc.until("side", {"jobDeploymentStatus": "Complete"})
        st = done["status"]
        assert st["jobStatus"] == "SUCCEEDED"
        assert sc.jobs_of(st["rayClusterName"]).submissions == 1, "the restart re-attached, no resubmit"
        assert (await client.list(JOBS, ns))["items"] == []
        cluster = await client.get(RAYCLUSTERS, st["rayClusterName"], ns)
        head = cluster["spec"]["headGroupSpec"]["template"]["spec"]
        assert head["restartPolicy"] == "Never"
        sidecar = head["containers"][-1]
        assert (sidecar["name"], sidecar["restartPolicy"]) == ("ray-job-submitter", "OnFailure")
        assert "ray job status" in sidecar["args"][0] and "ray job logs" in sidecar["args"][0]
        (pod,) = (await client.list(PODS, ns, label_selector=f"ray.io/cluster={st['rayClusterName']}"))[
            "items"
        ]
        (cs,) = [c for c in pod["status"]["containerStatuses"] if c["name"] == "ray-job-submitter"]
        assert cs["restartCount"] == 1 and cs["lastState"]["terminated"]["exitCode"] == 1
        assert cs["state"]["terminated"]["exitCode"] == 0
