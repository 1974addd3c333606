"""One RayJob reconcile's inputs, handed explicitly to every phase function.

The reconciler loads the RayJob, builds a :class:`JobContext`, and calls the phase for the
current ``jobDeploymentStatus``. Phases edit ``status`` (a copy: the reconciler writes it once,
at the end, only if it changed) and ask for a wake-up through ``requeue`` (the kit's
:class:`~controllers.common.requeue.Requeue`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from controllers.common.requeue import Requeue
from controllers.common.scope import Deps, Ref
from controllers.ray.dashboard import DashboardClientFactory
from controllers.rayjob.memory import JobMemo
from controllers.rayjob.options import RayJobOptions
from controllers.rayjob.shapes import JobDeploymentStatus, RayJobStatus
from kuberay_py.clock import format_rfc3339, parse_rfc3339
from kuberay_py.objects import Obj

__all__ = ["JobContext"]


@dataclass
class JobContext:
    deps: Deps[RayJobOptions]
    dashboards: DashboardClientFactory
    memo: JobMemo
    job: Obj  # the RayJob (cached, or our newer write of it); status edits go to ``status``
    status: RayJobStatus
    requeue: Requeue = field(default_factory=Requeue)  # when this reconcile runs again
    transitions: list[tuple[str, str]] = field(default_factory=list)  # (from, to) deployment states

    @property
    def ref(self) -> Ref:
        return Ref.of(self.job)

    @property
    def spec(self) -> dict[str, Any]:
        return self.job.get("spec") or {}

    @property
    def mode(self) -> str:
        return str(self.spec.get("submissionMode") or "K8sJobMode")

    @property
    def selector_cluster(self) -> str | None:
        selector = self.spec.get("clusterSelector")
        return None if selector is None else str(selector.get("ray.io/cluster", ""))

    @property
    def state(self) -> JobDeploymentStatus:
        return self.status.get("jobDeploymentStatus") or ""

    def move(self, state: JobDeploymentStatus, reason: str | None = None, message: str | None = None) -> None:
        self.transitions.append((self.state, state))
        self.status["jobDeploymentStatus"] = state
        if reason is not None:
            self.status["reason"] = reason
        if message is not None:
            self.status["message"] = message
        self.requeue.immediately()

    def now(self) -> datetime:
        return self.deps.clock.utcnow()

    def now_text(self) -> str:
        return format_rfc3339(self.deps.clock.utcnow())

    def since(self, field_name: str) -> float | None:
        """Seconds since the timestamp ``status.<field_name>`` (None when unset)."""
        when = parse_rfc3339(self.status.get(field_name))
        return None if when is None else (self.deps.clock.utcnow() - when).total_seconds()
