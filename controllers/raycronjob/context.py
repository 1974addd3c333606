"""One RayCronJob reconcile's inputs and working state, handed explicitly to every phase.

The same shape as the other controllers' contexts: the reconciler loads the RayCronJob, builds a
:class:`CronContext`, and calls the phase functions of ``schedule.py`` in order; each reads what it
needs from here and asks for its wake-up through ``requeue``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from controllers.common.cache import CacheReader
from controllers.common.events import Recorder
from controllers.common.requeue import Requeue
from controllers.raycronjob.memory import CronMemo, Memory
from controllers.raycronjob.options import RayCronJobOptions
from kuberay_py.client import Client
from kuberay_py.clock import Clock
from kuberay_py.objects import Obj

__all__ = ["CronContext"]


@dataclass
class CronContext:
    client: Client
    cache: CacheReader
    recorder: Recorder
    clock: Clock
    options: RayCronJobOptions
    memory: Memory
    memo: CronMemo  # this RayCronJob's part of ``memory``
    cron: Obj  # the RayCronJob as last read (the cache, or our newer write) or written
    requeue: Requeue = field(default_factory=Requeue)

    @property
    def namespace(self) -> str:
        return str(self.cron["metadata"]["namespace"])

    @property
    def name(self) -> str:
        return str(self.cron["metadata"]["name"])

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def generation(self) -> int:
        return int(self.cron["metadata"].get("generation") or 0)

    @property
    def spec(self) -> dict[str, Any]:
        return self.cron.get("spec") or {}
