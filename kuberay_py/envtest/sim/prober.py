"""The kubelet's probe result bookkeeping (``pkg/kubelet/prober/worker.go``), without the timers.

A probe's reported result only flips after ``failureThreshold`` consecutive failures or
``successThreshold`` consecutive successes. Readiness starts as failure (a container is not ready
until its probe says so), liveness as success and startup as unknown. Keeping this separate from
the loop that runs probes lets tests check the threshold arithmetic exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["ProbeKind", "ProbeState", "ProbeTiming"]

ProbeKind = Literal["readiness", "liveness", "startup"]


@dataclass(frozen=True)
class ProbeTiming:
    """The probe's timing fields with the API defaults applied (``pkg/apis/core/v1/defaults.go``)."""

    initial_delay: float = 0.0
    period: float = 10.0
    timeout: float = 1.0
    success_threshold: int = 1
    failure_threshold: int = 3

    @classmethod
    def of(cls, probe: dict[str, Any]) -> ProbeTiming:
        def num(key: str, default: float) -> float:
            value = probe.get(key)
            return float(value) if isinstance(value, int | float) and value > 0 else default

        return cls(
            initial_delay=float(probe.get("initialDelaySeconds") or 0),
            period=num("periodSeconds", 10),
            timeout=num("timeoutSeconds", 1),
            success_threshold=int(num("successThreshold", 1)),
            failure_threshold=int(num("failureThreshold", 3)),
        )


@dataclass
class ProbeState:
    kind: ProbeKind
    timing: ProbeTiming
    result: bool | None = field(default=None)
    _last: bool | None = None
    _run: int = 0

    def __post_init__(self) -> None:
        if self.result is None:
            self.result = {"readiness": False, "liveness": True, "startup": None}[self.kind]

    def observe(self, success: bool) -> bool:
        """Record one attempt; True when the reported result changed."""
        if self._last is success:
            self._run += 1
        else:
            self._last = success
            self._run = 1
        threshold = self.timing.success_threshold if success else self.timing.failure_threshold
        if self._run < threshold:
            return False
        if self.result is success:
            return False
        self.result = success
        return True

    def reset(self) -> None:
        """After a container restart: the streak starts over (worker.go sets resultRun = 0)."""
        self._last = None
        self._run = 0
        self.result = {"readiness": False, "liveness": True, "startup": None}[self.kind]
