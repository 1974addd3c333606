"""Batch schedulers behind ``--enable-batch-scheduler`` / ``--batch-scheduler`` (KubeRay v1.7.0).

The public API is :func:`from_options` and the :class:`~.base.Scheduler` it returns; the
controllers receive that object through their options and call its four hooks (see
:mod:`.base`). Each scheduler is one module: :mod:`.volcano`, :mod:`.yunikorn`, :mod:`.kai`,
:mod:`.scheduler_plugins`, and :mod:`.kubernetes_was` behind the ``KubernetesWAS`` gate.
"""

from __future__ import annotations

from collections.abc import Callable

from controllers.batchscheduler.base import Scheduler, SchedulerError, SubmitterPodSpec
from controllers.batchscheduler.kai import Kai
from controllers.batchscheduler.kubernetes_was import WORKLOADS, KubernetesWAS
from controllers.batchscheduler.scheduler_plugins import SchedulerPlugins
from controllers.batchscheduler.volcano import Volcano
from controllers.batchscheduler.yunikorn import YuniKorn
from kuberay_py.client import Client

__all__ = [
    "SCHEDULER_NAMES",
    "Scheduler",
    "SchedulerError",
    "SchedulerUnavailable",
    "SubmitterPodSpec",
    "UnknownScheduler",
    "check_served",
    "from_options",
]

_BY_NAME: dict[str, Callable[[SubmitterPodSpec], Scheduler]] = {
    Volcano.plugin: Volcano,
    YuniKorn.plugin: YuniKorn,
    Kai.plugin: lambda _submitter: Kai(),
    SchedulerPlugins.plugin: lambda _submitter: SchedulerPlugins(),
}

#: The names ``--batch-scheduler`` accepts.
SCHEDULER_NAMES: tuple[str, ...] = tuple(_BY_NAME)


class UnknownScheduler(ValueError):
    """The flags select no valid scheduler (KubeRay exits at start)."""


class SchedulerUnavailable(RuntimeError):
    """The selected scheduler's API is not served: KubeRay cannot create its scheduler and exits."""


async def check_served(client: Client, *, kubernetes_was: bool) -> None:
    """Refuse to start when the Kubernetes WAS API is not served, as KubeRay v1.7.0 does.

    KubeRay's KubernetesWAS factory picks a served ``scheduling.k8s.io`` version by discovery
    when the scheduler is created, before the manager starts; finding none, the operator logs
    "unable to create batch scheduler manager" and exits 1. The other schedulers check nothing
    at start: a missing PodGroup CRD (Volcano) only keeps the RayCluster controller's watch from
    syncing, so the operator stops when its cache sync times out.
    """
    if not kubernetes_was:
        return
    if not await client.served(WORKLOADS):
        raise SchedulerUnavailable(
            f"no served scheduling.k8s.io API version available for {KubernetesWAS.plugin}: "
            "scheduling.k8s.io/v1alpha2 API is not available"
        )


def from_options(
    enable: bool, name: str, *, submitter_pod_spec: SubmitterPodSpec, kubernetes_was: bool = False
) -> Scheduler | None:
    """The scheduler the operator's flags select, or None for Kubernetes' default scheduler.

    ``enable`` is the deprecated ``--enable-batch-scheduler`` (``enableBatchScheduler``): it means
    Volcano and wins over ``name``, as in KubeRay's ``getSchedulerFactory``. KubeRay refuses both
    together at start (``ValidateBatchSchedulerConfig``); that check belongs to the CLI.
    ``kubernetes_was`` is the ``KubernetesWAS`` feature gate: it selects Kubernetes' own
    workload-aware scheduling and cannot be combined with either flag (KubeRay exits at start).
    ``submitter_pod_spec`` is the RayJob controller's submitter builder, which the gang schedulers
    reserve resources for; the wiring passes it in so this layer imports no controller package.
    """
    if kubernetes_was:
        if enable or name:
            raise UnknownScheduler(
                "the KubernetesWAS feature gate cannot be combined with --batch-scheduler or "
                "--enable-batch-scheduler"
            )
        return KubernetesWAS()
    if enable:
        return Volcano(submitter_pod_spec)
    if not name:
        return None
    try:
        factory = _BY_NAME[name]
    except KeyError:
        raise UnknownScheduler(f"the scheduler is not supported, name={name}") from None
    return factory(submitter_pod_spec)
