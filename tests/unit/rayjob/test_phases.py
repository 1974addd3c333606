"""Each RayJob phase function on an explicit JobContext over fakes.

No reconciler is built: a test makes a context (the RayJob, what the cache holds, a memo), calls
one phase and reads the working status, the state it moved to, the requeue it asked for, what it
sent to the API and the events, as tests/unit/raycluster/test_phases.py and
tests/unit/rayservice/test_phases.py do for the other controllers.
"""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any, cast

from controllers import constants as C
from controllers.common.names import RAND_ALPHABET
from controllers.common.scope import Deps
from controllers.ray.dashboard import DashboardClientFactory
from controllers.rayjob import cleanup, lifecycle
from controllers.rayjob.context import JobContext
from controllers.rayjob.memory import JobMemo
from controllers.rayjob.options import RayJobOptions
from controllers.rayjob.shapes import RayJobStatus
from kuberay_py.client import Client
from kuberay_py.client.resources import JOBS
from kuberay_py.clock import FakeClock, format_rfc3339
from kuberay_py.controller import Result
from kuberay_py.objects import Obj
from tests.rayjob_harness import rayjob
from tests.unit.fakes import Events, FakeCache, RecordingClient


class Kit:
    def __init__(self, job: Obj, status: dict[str, Any] | None = None, **options: Any) -> None:
        self.cache, self.client, self.events, self.clock = (
            FakeCache(),
            RecordingClient(),
            Events(),
            FakeClock(),
        )
        self.options = RayJobOptions(**options)
        job = copy.deepcopy(job)
        job["metadata"].update(namespace="ns", uid="job-uid", generation=1)
        self.job = job
        self.memo = JobMemo(uid="job-uid")
        self.ctx = self.fresh(cast(RayJobStatus, status or {}))

    def fresh(self, status: RayJobStatus | None = None) -> JobContext:
        """A context for the next phase call (the same fakes and memo, as across reconciles)."""
        working = cast(RayJobStatus, copy.deepcopy(status if status is not None else self.ctx.status))
        self.ctx = JobContext(
            Deps(cast(Client, self.client), self.cache, self.events, self.clock, self.options),
            cast(DashboardClientFactory, None),  # these phases never reach the dashboard
            self.memo,
            self.job,
            working,
        )
        return self.ctx

    def cluster(self, name: str, *, state: str | None = None, deleting: bool = False) -> Obj:
        """A RayCluster of this job in the cache."""
        meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}"}
        if deleting:
            meta["deletionTimestamp"] = format_rfc3339(self.clock.utcnow())
        cluster: Obj = {"metadata": meta, "spec": copy.deepcopy(self.job["spec"]["rayClusterSpec"])}
        if state is not None:
            cluster["status"] = {"state": state}
        return self.cache.put(C.RAYCLUSTERS, cluster)

    def now_minus(self, seconds: float) -> str:
        return format_rfc3339(self.clock.utcnow() - timedelta(seconds=seconds))


def job(**spec: Any) -> Obj:
    return rayjob("rj", **spec)


# -- New ---------------------------------------------------------------------------------------


def test_new_names_the_attempt_before_anything_is_created() -> None:
    kit = Kit(job())
    lifecycle.new(kit.ctx)
    st = kit.ctx.status
    for name in (st["jobId"], st["rayClusterName"]):
        prefix, suffix = name.rsplit("-", 1)
        assert prefix == "rj" and len(suffix) == 5 and set(suffix) <= set(RAND_ALPHABET)
    assert st["startTime"] == format_rfc3339(kit.clock.utcnow()) and st["jobStatus"] == ""
    assert kit.ctx.state == "Initializing" and kit.ctx.transitions == [("", "Initializing")]
    assert kit.ctx.requeue.result() == Result(requeue=True)  # the next phase runs at once
    assert kit.client.requests == []


def test_new_takes_the_selected_cluster_and_interactive_mode_has_no_job_id() -> None:
    kit = Kit(job(clusterSelector={"ray.io/cluster": "shared"}, submissionMode="InteractiveMode"))
    lifecycle.new(kit.ctx)
    assert kit.ctx.status["rayClusterName"] == "shared" and "jobId" not in kit.ctx.status


# -- Initializing ------------------------------------------------------------------------------


async def test_initializing_creates_the_cluster_and_waits_for_it_to_be_ready() -> None:
    kit = Kit(
        job(), {"jobDeploymentStatus": "Initializing", "jobId": "rj-b2c4d", "rayClusterName": "rj-x7k2m"}
    )
    await lifecycle.initializing(kit.ctx)
    assert kit.client.requests == [("create", "RayCluster", "rj-x7k2m")]
    created = kit.client.stored[("RayCluster", "rj-x7k2m")]
    assert created["metadata"]["ownerReferences"][0]["kind"] == "RayJob"
    assert kit.events.reasons() == ["CreatedRayCluster"]
    assert kit.ctx.state == "Initializing" and not kit.ctx.requeue.now  # the cluster's status wakes us


async def test_a_ready_cluster_gets_its_dashboard_url_and_the_submitter_then_running() -> None:
    kit = Kit(
        job(), {"jobDeploymentStatus": "Initializing", "jobId": "rj-b2c4d", "rayClusterName": "rj-x7k2m"}
    )
    kit.cluster("rj-x7k2m", state="ready")
    await lifecycle.initializing(kit.ctx)
    st = kit.ctx.status
    assert st["dashboardURL"] == "rj-x7k2m-head-svc.ns.svc.cluster.local:8265"
    assert st["rayClusterStatus"] == {"state": "ready"}
    assert kit.client.requests == [("create", "Job", "rj")]  # the K8sJobMode submitter
    assert kit.events.reasons() == ["CreatedRayJobSubmitter"]
    assert kit.ctx.state == "Running" and kit.ctx.transitions == [("Initializing", "Running")]


async def test_initializing_a_suspended_job_suspends_it() -> None:
    kit = Kit(job(suspend=True), {"jobDeploymentStatus": "Initializing", "rayClusterName": "rj-x7k2m"})
    await lifecycle.initializing(kit.ctx)
    assert kit.ctx.state == "Suspending" and kit.client.requests == []


async def test_the_active_deadline_is_a_timer_until_it_passes_then_failed() -> None:
    start = {"jobDeploymentStatus": "Initializing", "rayClusterName": "rj-x7k2m"}
    kit = Kit(job(activeDeadlineSeconds=60), start)
    kit.ctx.status["startTime"] = kit.now_minus(45)
    await lifecycle.initializing(kit.ctx)
    assert kit.ctx.requeue.delay is not None and abs(kit.ctx.requeue.delay - 15) < 1
    assert kit.ctx.state == "Initializing"

    late = Kit(job(activeDeadlineSeconds=60), start)
    late.ctx.status["startTime"] = late.now_minus(61)
    await lifecycle.initializing(late.ctx)
    assert late.ctx.state == "Failed" and late.ctx.status["reason"] == "DeadlineExceeded"
    assert late.client.requests == []  # no cluster is created for a job already out of time


# -- Waiting, Suspended ------------------------------------------------------------------------


def test_interactive_mode_waits_for_the_users_job_id() -> None:
    kit = Kit(job(submissionMode="InteractiveMode"), {"jobDeploymentStatus": "Waiting"})
    lifecycle.waiting(kit.ctx)
    assert kit.ctx.state == "Waiting" and not kit.ctx.requeue.now
    kit.job["spec"]["jobId"] = "mine"
    ctx = kit.fresh()
    lifecycle.waiting(ctx)
    assert ctx.status["jobId"] == "mine" and ctx.state == "Running"


def test_resuming_a_suspended_job_starts_it_afresh() -> None:
    kit = Kit(job(suspend=True), {"jobDeploymentStatus": "Suspended"})
    lifecycle.suspended(kit.ctx)
    assert kit.ctx.state == "Suspended"
    kit.job["spec"]["suspend"] = False
    ctx = kit.fresh()
    lifecycle.suspended(ctx)
    assert ctx.state == "" and ctx.status["jobStatus"] == ""


async def test_suspending_deletes_the_children_then_forgets_the_attempt() -> None:
    status = {"jobDeploymentStatus": "Suspending", "rayClusterName": "rj-x7k2m", "jobId": "rj-b2c4d",
              "jobStatus": "", "dashboardURL": "x:8265", "message": "m"}  # fmt: skip
    kit = Kit(job(suspend=True), status)
    kit.cluster("rj-x7k2m")
    kit.cache.put(JOBS, {"metadata": {"name": "rj", "namespace": "ns", "uid": "submitter"}})
    await lifecycle.suspending_or_retrying(kit.ctx)
    assert kit.client.requests == [("delete", "RayCluster", "rj-x7k2m"), ("delete", "Job", "rj")]
    assert kit.ctx.state == "Suspending"  # until both are gone from the cache
    kit.cache.remove(C.RAYCLUSTERS, "ns", "rj-x7k2m")
    kit.cache.remove(JOBS, "ns", "rj")
    ctx = kit.fresh()
    await lifecycle.suspending_or_retrying(ctx)
    assert ctx.state == "Suspended"
    assert {"rayClusterName", "jobId", "dashboardURL", "message"}.isdisjoint(ctx.status)


# -- Complete / Failed -------------------------------------------------------------------------


async def test_shutdown_after_the_ttl_deletes_the_cluster() -> None:
    status = {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED", "rayClusterName": "rj-x7k2m"}
    kit = Kit(job(shutdownAfterJobFinishes=True, ttlSecondsAfterFinished=30), status)
    kit.cluster("rj-x7k2m", state="ready")
    kit.ctx.status["endTime"] = kit.now_minus(10)
    await cleanup.terminal(kit.ctx)
    assert kit.client.requests == [] and kit.ctx.requeue.delay is not None
    assert abs(kit.ctx.requeue.delay - 20) < 1
    await kit.clock.advance(21)
    await cleanup.terminal(kit.fresh())
    assert ("delete", "RayCluster", "rj-x7k2m") in kit.client.requests
