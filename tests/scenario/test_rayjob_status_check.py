"""docs/reference/rayjob.md §8 item 13: failing dashboard polls start a persisted timer, and past
``RAYJOB_STATUS_CHECK_TIMEOUT_SECONDS`` the RayJob fails with JobStatusCheckTimeoutExceeded
(not retried). Its own operator, so the timeout can be short (2 s)."""

from __future__ import annotations

from controllers.constants import RAYJOBS
from controllers.rayjob.options import RayJobOptions
from kuberay_py.client.resources import PODS
from tests.polling import eventually
from tests.rayjob_harness import job_scenario, rayjob


async def test_failing_status_checks_time_out_the_job() -> None:
    options = RayJobOptions(poll_min=0.2, poll_max=0.5, status_check_timeout=2.0)
    async with job_scenario(options) as sc:
        client, ns, runtime = sc.client, sc.namespace, sc.runtime
        await sc.create(rayjob("flaky", "sleep 300", submissionMode="HTTPMode", backoffLimit=2))
        running = await sc.until("flaky", {"jobStatus": "RUNNING"})
        cluster = running["status"]["rayClusterName"]
        (head,) = (await client.list(PODS, ns, label_selector=f"ray.io/cluster={cluster}"))["items"]
        runtime.faults(ns, head["metadata"]["name"]).dashboard_error = True

        async def timer_persisted() -> bool | None:
            st = (await sc.get("flaky"))["status"]
            return True if st.get("jobStatusCheckFailureStartTime") else None

        await eventually(timer_persisted, "jobStatusCheckFailureStartTime persisted", 30)
        failed = await sc.until("flaky", {"jobDeploymentStatus": "Failed"})
        st = failed["status"]
        assert st["reason"] == "JobStatusCheckTimeoutExceeded"
        assert "exceeded timeout of 2s" in st["message"]
        assert st["failed"] == 1, "a status-check timeout is not retried"
        assert (await client.get(RAYJOBS, "flaky", ns))["status"]["rayClusterName"] == cluster
