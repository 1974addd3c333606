"""The KubeRay v1.7 feature gates that change what a RayCluster spec may say and what the operator
builds and reports for it.

One frozen value, built once from ``--feature-gates`` and passed down explicitly (validation,
builders, status, the optional controllers), so a pure function never reads global gate state and
a test turns one gate on without touching the others. The alpha gates are off by default in
v1.7.0 (``pkg/features``): with one off, setting its field is an invalid spec, as in KubeRay. The
two beta gates are on by default; a KubeRay user who switched one off gets KubeRay's older
behaviour here too (no status conditions; no multi-host indexing labels or replica-group
reconcile).
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
    status_conditions: bool = True  # RayClusterStatusConditions (beta)
    multi_host_indexing: bool = True  # RayMultiHostIndexing (beta)

    @classmethod
    def from_feature_gates(cls, gates: Mapping[str, bool]) -> ClusterGates:
        """From the parsed ``--feature-gates`` map (gate name -> enabled); an absent name has its
        v1.7.0 default."""
        return cls(
            network_policy=gates.get("RayClusterNetworkPolicy", False),
            mtls=gates.get("RayClusterMTLS", False),
            history_server=gates.get("RayClusterHistoryServer", False),
            embedded_gcs=gates.get("GCSFaultToleranceEmbeddedStorage", False),
            status_conditions=gates.get("RayClusterStatusConditions", True),
            multi_host_indexing=gates.get("RayMultiHostIndexing", True),
        )

    @classmethod
    def all_on(cls) -> ClusterGates:
        return cls(network_policy=True, mtls=True, history_server=True, embedded_gcs=True)
