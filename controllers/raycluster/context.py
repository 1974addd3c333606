"""One RayCluster reconcile's inputs, handed explicitly to every phase function.

The reconciler builds a :class:`ClusterContext` after loading the RayCluster and its Pods from the
cache; phases read the cluster and the cached state from it, write through ``client`` and record
what they must remember in ``memo``. Nothing else is shared between phases.
"""

from __future__ import annotations

from dataclasses import dataclass

from controllers.common.cache import CacheReader
from controllers.common.events import Recorder
from controllers.raycluster.memory import ClusterMemo
from controllers.raycluster.options import RayClusterOptions
from kuberay_py.client import Client
from kuberay_py.clock import Clock
from kuberay_py.controller import Expectations
from kuberay_py.objects import Obj

__all__ = ["ClusterContext"]


@dataclass
class ClusterContext:
    client: Client
    cache: CacheReader
    recorder: Recorder
    clock: Clock
    options: RayClusterOptions
    expectations: Expectations
    memo: ClusterMemo
    cluster: Obj  # the RayCluster (cached, or our newer write of it); never mutated
    pods: list[Obj]  # its Pods in the cache, terminating ones included

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def namespace(self) -> str:
        return str(self.cluster["metadata"]["namespace"])

    @property
    def name(self) -> str:
        return str(self.cluster["metadata"]["name"])
