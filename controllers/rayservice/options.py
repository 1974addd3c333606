"""The RayService controller's tunables and the few names its modules share."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from controllers.api.gates import ClusterGates

__all__ = [
    "COND_SERVE_CONFIG_VALID",
    "DEFAULT_DELETION_DELAY",
    "SERVICE_NAME_LABEL",
    "RayServiceOptions",
]

DEFAULT_DELETION_DELAY = 60.0
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
# kuberay-py only: whether Ray accepted the last serveConfigV2 PUT (a 400 keeps the old apps running).
COND_SERVE_CONFIG_VALID = "ServeConfigValid"


@dataclass
class RayServiceOptions:
    serve_poll_interval: float = 2.0  # while Serve applications are deploying
    status_refresh_interval: float | None = 300.0  # slow refresh of application statuses when idle
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    incremental_upgrade: bool = True  # the RayServiceIncrementalUpgrade feature gate
    # The RayCluster alpha gates: what rayClusterConfig may say (the RayCluster controller's own).
    cluster_gates: ClusterGates = field(default_factory=ClusterGates)
