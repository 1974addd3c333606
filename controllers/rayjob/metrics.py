"""KubeRay's ``kuberay_job_*`` metrics.

``kuberay_job_execution_duration_seconds`` is set on the pass that takes a RayJob from a live
state to Complete, Failed or Retrying (value: now − ``startTime``; ``retry_count``: ``failed``
before that pass) and removed with the RayJob. ``kuberay_job_info`` and
``kuberay_job_deployment_status`` are computed from the cache at scrape time (no API request), with
KubeRay's names and labels.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import Gauge
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from kuberay_py.metrics import registry

if TYPE_CHECKING:
    from controllers.rayjob.context import JobContext

__all__ = ["EXECUTION_DURATION", "forget_job", "observe_transition", "register_job_metrics"]

EXECUTION_DURATION = Gauge(
    "kuberay_job_execution_duration_seconds",
    "Duration of the RayJob CR's JobDeploymentStatus transition from Initializing to either the "
    "Retrying state or a terminal state",
    ["name", "namespace", "uid", "job_deployment_status", "retry_count"],
    registry=registry,
)


# (namespace, name) -> the label sets we set, so forget_job removes exactly those.
_SERIES: dict[tuple[str, str], set[tuple[str, ...]]] = {}


def observe_transition(ctx: JobContext, new_state: str) -> None:
    elapsed = ctx.since("startTime")
    if elapsed is None:
        return
    retries = int(ctx.status.get("failed") or 0) - (1 if new_state in ("Failed", "Retrying") else 0)
    uid = str(ctx.job["metadata"].get("uid", ""))
    labels = (ctx.ref.name, ctx.ref.namespace, uid, new_state, str(max(0, retries)))
    EXECUTION_DURATION.labels(*labels).set(max(0.0, elapsed))
    _SERIES.setdefault((ctx.ref.namespace, ctx.ref.name), set()).add(labels)


def forget_job(namespace: str, name: str) -> None:
    for labels in _SERIES.pop((namespace, name), set()):
        EXECUTION_DURATION.remove(*labels)


class _JobCollector(Collector):
    def __init__(self, list_jobs: Callable[[], Iterable[dict[str, Any]]]) -> None:
        self._list = list_jobs

    def collect(self) -> Iterator[GaugeMetricFamily]:
        ids = ["name", "namespace", "uid"]
        info = GaugeMetricFamily(
            "kuberay_job_info", "Metadata information about RayJob custom resources", labels=ids
        )
        state = GaugeMetricFamily(
            "kuberay_job_deployment_status",
            "The RayJob's current deployment status",
            labels=[*ids, "deployment_status"],
        )
        for job in self._list():
            meta = job.get("metadata") or {}
            labels = [str(meta.get("name", "")), str(meta.get("namespace", "")), str(meta.get("uid", ""))]
            info.add_metric(labels, 1)
            # KubeRay's label is the field as is: empty for a new RayJob (Prometheus then stores
            # the series without a deployment_status label).
            status = str((job.get("status") or {}).get("jobDeploymentStatus") or "")
            state.add_metric([*labels, status], 1)
        yield info
        yield state


def register_job_metrics(list_jobs: Callable[[], Iterable[dict[str, Any]]]) -> Callable[[], None]:
    collector = _JobCollector(list_jobs)
    registry.register(collector)
    return lambda: registry.unregister(collector)
