"""What the RayService reconciler's phases share: options, the recorder protocol, state."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from controllers import constants as c
from controllers.common.cache import CacheReader
from controllers.ray.dashboard import DashboardClientFactory
from controllers.ray.health import HeadProxyHealthChecker
from controllers.rayservice.serve import ServeConfigCache
from kuberay_py.client import Client
from kuberay_py.clock import Clock
from kuberay_py.log import get_logger

__all__ = ["COND_SERVE_CONFIG_VALID", "EventRecorderLike", "PhaseBase", "RayServiceOptions", "RequeueTimer"]


log = get_logger("controllers.rayservice.reconciler")

DEFAULT_DELETION_DELAY = 60.0
MANAGED_BY_KUBERAY = "ray.io/kuberay-operator"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
# kuberay-py only: whether Ray accepted the last serveConfigV2 PUT (a 400 keeps the old apps running).
COND_SERVE_CONFIG_VALID = "ServeConfigValid"


class EventRecorderLike(Protocol):
    def event(
        self, obj: dict[str, Any], type_: Literal["Normal", "Warning"], reason: str, message: str
    ) -> None: ...


@dataclass
class RayServiceOptions:
    serve_poll_interval: float = 2.0  # while Serve applications are deploying
    status_refresh_interval: float | None = 300.0  # slow refresh of application statuses when idle
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))


@dataclass
class PhaseBase:
    """State the phases read; set by :class:`RayServiceReconciler.__init__`."""

    client: Client
    cache: CacheReader
    recorder: EventRecorderLike
    dashboards: DashboardClientFactory
    checker: HeadProxyHealthChecker
    clock: Clock
    options: RayServiceOptions
    serve_configs: ServeConfigCache
    _warned: dict[tuple[str, str], str]
    _rejected: dict[tuple[str, str], str]
    _tokens: dict[str, str]  # head Pod uid -> Ray auth token

    def _warn(self, svc: dict[str, Any], key: str, reason: str, message: str) -> None:
        """A Warning event, once per distinct message (never one per reconcile)."""
        if self._warned.get((key, reason)) == message:
            return
        self._warned[(key, reason)] = message
        self.recorder.event(svc, c.WARNING, reason, message)


class RequeueTimer:
    """The earliest of the delays the phases asked for (None: rely on watches)."""

    def __init__(self) -> None:
        self.delay: float | None = None

    def at(self, seconds: float) -> None:
        seconds = max(0.001, seconds)
        self.delay = seconds if self.delay is None else min(self.delay, seconds)


def _name(status: dict[str, Any], which: str) -> str:
    return str((status.get(f"{which}ServiceStatus") or {}).get("rayClusterName") or "")


def _cluster_names(status: dict[str, Any]) -> list[str]:
    return [n for n in (_name(status, "active"), _name(status, "pending")) if n]


