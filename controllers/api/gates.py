"""The KubeRay v1.7 alpha feature gates that change what a RayCluster spec may say and what the
operator builds from it.

One frozen value, built once from ``--feature-gates`` and passed down explicitly (validation,
builders, the optional controllers), so a pure function never reads global gate state and a test
turns one gate on without touching the others. Every gate here is alpha and off by default in
v1.7.0 (``pkg/features``): with it off, setting the field is an invalid spec, as in KubeRay.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["ClusterGates"]


@dataclass(frozen=True)
class ClusterGates:
    network_policy: bool = False  # RayClusterNetworkPolicy
    mtls: bool = False  # RayClusterMTLS
    history_server: bool = False  # RayClusterHistoryServer
    embedded_gcs: bool = False  # GCSFaultToleranceEmbeddedStorage

    @classmethod
    def from_feature_gates(cls, gates: Mapping[str, bool]) -> ClusterGates:
        """From the parsed ``--feature-gates`` map (gate name -> enabled); absent names are off."""
        return cls(
            network_policy=gates.get("RayClusterNetworkPolicy", False),
            mtls=gates.get("RayClusterMTLS", False),
            history_server=gates.get("RayClusterHistoryServer", False),
            embedded_gcs=gates.get("GCSFaultToleranceEmbeddedStorage", False),
        )

    @classmethod
    def all_on(cls) -> ClusterGates:
        return cls(network_policy=True, mtls=True, history_server=True, embedded_gcs=True)
