"""The one shape every batch scheduler has (KubeRay v1.7.0's ``BatchScheduler`` interface).

The controllers call four hooks and nothing else, so a scheduler is a small object with no state
beyond its name; the API calls it makes go through the client the caller hands in:

* :meth:`Scheduler.submit_cluster` / :meth:`Scheduler.submit_job` -- on every RayCluster Pod
  reconcile and every Initializing RayJob pass (``DoBatchSchedulingOnSubmission``), e.g. the
  PodGroup.
* :meth:`Scheduler.add_metadata` -- on each child just before its create
  (``AddMetadataToChildResource``): Pods, the submitter Job's Pod template, a RayJob's RayCluster.
* :meth:`Scheduler.cleanup_job` -- when a RayJob finishes or suspends (``CleanupOnCompletion``).

``owns`` names the scheduler's own kind the RayCluster controller watches (KubeRay's
``ConfigureReconciler``), or None.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kuberay_py.client import Client, Resource
from kuberay_py.objects import Obj

__all__ = [
    "Scheduler",
    "SchedulerError",
    "SubmitterPodSpec",
    "copy_label",
    "set_annotation",
    "set_scheduler_name",
]

#: A RayJob's K8sJobMode submitter Pod spec, as the RayJob controller builds it
#: (``controllers.rayjob.builders.submitter_pod_spec``). Handed in by the operator's wiring, so
#: this shared layer never imports a controller package.
SubmitterPodSpec = Callable[[Obj], dict[str, Any]]


class SchedulerError(Exception):
    """A scheduler refused an object (KubeRay returns the error and requeues)."""


class Scheduler:
    """No-op defaults; each scheduler overrides what it does."""

    #: What ``--batch-scheduler`` calls it.
    plugin: str = ""
    #: The Pods' ``spec.schedulerName``.
    name: str = ""
    #: The kind the RayCluster controller watches for this scheduler, if any.
    owns: Resource | None = None

    async def submit_cluster(self, client: Client, cluster: Obj) -> None:
        return None

    async def submit_job(self, client: Client, job: Obj) -> None:
        return None

    def add_metadata(self, parent: Obj, parent_kind: str, child: Obj, group: str) -> None:
        return None

    async def cleanup_job(self, client: Client, job: Obj) -> bool:
        return False


def _meta(obj: Obj) -> dict[str, Any]:
    meta: dict[str, Any] = obj.setdefault("metadata", {})
    return meta


def copy_label(parent: Obj, child: Obj, source: str, target: str | None = None) -> None:
    """The parent's non-empty label ``source`` onto the child as ``target`` (default: same key)."""
    labels = _meta(child).get("labels") or {}
    value = ((parent.get("metadata") or {}).get("labels") or {}).get(source)
    if value:
        labels[target or source] = value
    _meta(child)["labels"] = labels


def set_annotation(child: Obj, key: str, value: str) -> None:
    annotations = _meta(child).get("annotations") or {}
    annotations[key] = value
    _meta(child)["annotations"] = annotations


def set_scheduler_name(child: Obj, name: str) -> None:
    """``spec.schedulerName`` on a Pod or Pod template; a RayCluster child gets none (as KubeRay)."""
    if child.get("kind") in (None, "Pod"):
        child.setdefault("spec", {})["schedulerName"] = name
