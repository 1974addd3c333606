"""One RayCluster reconcile's inputs, handed explicitly to every phase function.

The reconciler builds a :class:`ClusterContext` after loading the RayCluster and its Pods from the
cache; phases read the cluster and the cached state from it, write through ``deps.client`` and
record what they must remember in ``memo``. Nothing else is shared between phases.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controllers.common.requeue import Requeue
from controllers.common.scope import Deps, Ref
from controllers.raycluster.memory import ClusterMemo
from controllers.raycluster.options import RayClusterOptions
from kuberay_py.controller import Expectations
from kuberay_py.objects import Obj

__all__ = ["ClusterContext"]


@dataclass
class ClusterContext:
    deps: Deps[RayClusterOptions]  # client, cache, recorder, clock, options: the reconciler's
    expectations: Expectations
    memo: ClusterMemo
    cluster: Obj  # the RayCluster (cached, or our newer write of it); never mutated
    pods: list[Obj]  # its Pods in the cache, terminating ones included
    requeue: Requeue = field(default_factory=Requeue)  # when this reconcile runs again
    # Worker Pods this pass may still create (None: no bound); see RayClusterOptions.
    creates_left: int | None = None

    @property
    def ref(self) -> Ref:
        return Ref.of(self.cluster)
