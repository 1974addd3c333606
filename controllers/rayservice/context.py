"""One RayService reconcile's inputs and working state, handed explicitly to every phase.

The reconciler loads the RayService, builds a :class:`ServiceContext` with a working copy of its
status, and calls the phase functions in order; each reads what it needs from the context, edits
``status``, asks for a wake-up through ``requeue``, and the reconciler writes the status once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controllers import constants as c
from controllers.common.conditions import ConditionStatus, set_condition
from controllers.common.objects import generation_of
from controllers.common.requeue import Requeue
from controllers.common.scope import Deps, Ref
from controllers.ray.dashboard import DashboardClientFactory
from controllers.ray.health import HeadProxyHealthChecker
from controllers.rayservice.gateway_api import GatewayAPI
from controllers.rayservice.memory import Memory, ServiceMemo
from controllers.rayservice.options import RayServiceOptions
from controllers.rayservice.shapes import RayServiceStatus
from kuberay_py.clock import format_rfc3339
from kuberay_py.objects import Obj

__all__ = ["ServiceContext"]


@dataclass
class ServiceContext:
    deps: Deps[RayServiceOptions]
    dashboards: DashboardClientFactory
    checker: HeadProxyHealthChecker
    memory: Memory
    memo: ServiceMemo  # this RayService's part of ``memory``
    svc: Obj  # the RayService as last read or written; never mutated in place
    status: RayServiceStatus  # the working copy every phase edits; written once at the end
    requeue: Requeue = field(default_factory=Requeue)
    gateway_api: GatewayAPI | None = None  # discovery of the Gateway API (incremental upgrade only)

    @property
    def ref(self) -> Ref:
        return Ref.of(self.svc)

    @property
    def generation(self) -> int:
        return generation_of(self.svc)

    def now(self) -> str:
        """The clock's now as RFC 3339, for condition transition times."""
        return format_rfc3339(self.deps.clock.utcnow())

    def set_condition(self, type_: str, value: ConditionStatus, reason: str, message: str) -> None:
        """Set a condition of the working status, observed at this RayService's generation."""
        set_condition(
            self.status.setdefault("conditions", []),
            type_,
            value,
            reason,
            message,
            observed_generation=self.generation,
            now=self.now(),
        )

    def warn(self, reason: str, message: str) -> None:
        """A Warning event, once per distinct message (never one per reconcile)."""
        if self.memo.warned.get(reason) == message:
            return
        self.memo.warned[reason] = message
        self.deps.recorder.event(self.svc, c.WARNING, reason, message)
