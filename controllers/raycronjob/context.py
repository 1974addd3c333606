"""One RayCronJob reconcile's inputs and working state, handed explicitly to every phase.

The same shape as the other controllers' contexts: the reconciler loads the RayCronJob, builds a
:class:`CronContext`, and calls the phase functions of ``schedule.py`` in order; each reads what it
needs from here and asks for its wake-up through ``requeue``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controllers.common.requeue import Requeue
from controllers.common.scope import Deps, Ref
from controllers.raycronjob.memory import CronMemo
from controllers.raycronjob.options import RayCronJobOptions
from kuberay_py.objects import Obj

__all__ = ["CronContext"]


@dataclass
class CronContext:
    deps: Deps[RayCronJobOptions]
    memo: CronMemo
    cron: Obj  # the RayCronJob as last read (the cache, or our newer write) or written
    requeue: Requeue = field(default_factory=Requeue)

    @property
    def ref(self) -> Ref:
        return Ref.of(self.cron)
