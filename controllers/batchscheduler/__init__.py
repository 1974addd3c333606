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
from controllers.batchscheduler.kubernetes_was import KubernetesWAS
from controllers.batchscheduler.scheduler_plugins import SchedulerPlugins
from controllers.batchscheduler.volcano import Volcano
from controllers.batchscheduler.yunikorn import YuniKorn

__all__ = [
    "SCHEDULER_NAMES",
    "Scheduler",
    "SchedulerError",
    "SubmitterPodSpec",
    "UnknownScheduler",
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
