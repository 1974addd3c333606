"""NVIDIA KAI-Scheduler (``--batch-scheduler=kai-scheduler``): labels only, no CRD of ours.

KAI's own pod-grouper makes the PodGroups; KubeRay v1.7.0 only sets ``schedulerName`` and copies
the parent's ``kai.scheduler/queue`` label (a Pod without one stays Pending, which KubeRay logs).
It refuses K8sJobMode RayJobs: their submitter starts after the cluster, so they cannot be one gang.
"""

from __future__ import annotations

from controllers.batchscheduler.base import Scheduler, SchedulerError, copy_label, set_scheduler_name
from kuberay_py.client import Client
from kuberay_py.log import get_logger
from kuberay_py.objects import Obj

__all__ = ["QUEUE_LABEL", "Kai"]

log = get_logger("controllers.batchscheduler.kai")

QUEUE_LABEL = "kai.scheduler/queue"


class Kai(Scheduler):
    plugin = "kai-scheduler"
    name = "kai-scheduler"

    async def submit_job(self, client: Client, job: Obj) -> None:
        if ((job.get("spec") or {}).get("submissionMode") or "K8sJobMode") == "K8sJobMode":
            raise SchedulerError(
                "KAI-Scheduler does not support RayJob with K8sJobMode: the submitter pod is created "
                "after RayCluster is ready, preventing proper gang scheduling"
            )

    def add_metadata(self, parent: Obj, parent_kind: str, child: Obj, group: str) -> None:
        set_scheduler_name(child, self.name)
        if not ((parent.get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL):
            log.info("queue label missing from parent; child will remain pending", required_label=QUEUE_LABEL)
            return
        copy_label(parent, child, QUEUE_LABEL)
