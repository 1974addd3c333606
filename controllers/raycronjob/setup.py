"""Wiring the RayCronJob controller (feature gate ``RayCronJob``, off by default as in KubeRay).

Watches ``for_(RayCronJob)`` on generation changes only: its own ``lastScheduleTime`` writes wake
nothing (the next tick is a timer; a replay of missed ticks runs within the pass). No ``owns``:
the child RayJobs live on their own, as KubeRay's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from controllers import constants as C
from controllers.common.scope import deps_from
from controllers.raycronjob.options import RayCronJobOptions
from controllers.raycronjob.reconciler import RayCronJobReconciler
from kuberay_py.clock import Clock
from kuberay_py.controller import GenerationChanged

if TYPE_CHECKING:
    from kuberay_py.manager.manager import Manager

__all__ = ["CONTROLLER_NAME", "setup"]

CONTROLLER_NAME = "raycronjob-controller"


def setup(
    manager: Manager,
    *,
    clock: Clock | None = None,
    options: RayCronJobOptions | None = None,
    max_concurrent_reconciles: int = 1,
) -> RayCronJobReconciler:
    options = options or RayCronJobOptions()
    reconciler = RayCronJobReconciler(deps_from(manager, CONTROLLER_NAME, options, clock=clock))
    (
        manager.controller(CONTROLLER_NAME)
        .for_(C.RAYCRONJOBS, predicates=[GenerationChanged()])
        .with_options(max_concurrent_reconciles=max_concurrent_reconciles)
        .complete(reconciler)
    )
    return reconciler
