"""Gateway API test support: the v1.4.1 CRDs to install into envtest and a GatewayClass for the simulator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kuberay_py.envtest.sim.gateway import CONTROLLER_NAME

__all__ = ["GATEWAY_CRD_DIR", "gateway_class"]

GATEWAY_CRD_DIR = Path(__file__).resolve().parent / "fixtures" / "gateway-api"


def gateway_class(name: str = "sim") -> dict[str, Any]:
    """A GatewayClass the simulator's Gateway controller accepts."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "GatewayClass",
        "metadata": {"name": name},
        "spec": {"controllerName": CONTROLLER_NAME},
    }
