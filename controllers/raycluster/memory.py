"""What the RayCluster controller remembers between reconciles, per cluster, in one place.

Everything here is an optimisation over the cache, never the truth: losing it (an operator
restart) costs a few GETs and a write, not correctness. One :meth:`Memory.forget` drops all of it
when the RayCluster leaves the cache, so nothing grows with clusters that no longer exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controllers.common.memos import Memos
from controllers.common.objects import generation_of
from kuberay_py.controller import Expectations
from kuberay_py.objects import Obj

__all__ = ["ClusterMemo", "Memory"]


@dataclass
class ClusterMemo:
    """One RayCluster's memory; a new UID under the same name starts a fresh one."""

    uid: str
    # (kind, name) of children known to exist (GET once after start-up, then never again);
    # an Ingress entry is ("Ingress@<generation>", name): its drift check runs once a generation.
    known: set[tuple[str, str]] = field(default_factory=set)
    # Services we created that the cache has not shown yet, as the API returned them.
    fresh_services: dict[str, Obj] = field(default_factory=dict)
    # (resourceVersion we wrote over, object the API returned): our own latest write of the
    # RayCluster, used until the cache catches up so a lagging watch causes no 409 or rewrite.
    written: tuple[frozenset[str], Obj] | None = None
    # Monotonic time a counter-only status change was first held back.
    deferred_since: float | None = None
    # (generation, message) of the invalid spec last reported by a Warning event.
    invalid_reported: tuple[int, str] | None = None

    def generation_marker(self, kind: str, cluster: Obj, name: str) -> tuple[str, str] | None:
        """The ``known`` entry recording that ``kind``/``name`` was checked at the cluster's current
        generation, or None when it already was. Entries of earlier generations are dropped: a
        drift check runs once per generation; add the entry once the check has passed."""
        marker = (f"{kind}@{generation_of(cluster)}", name)
        if marker in self.known:
            return None
        for stale in [k for k in self.known if k[0].startswith(f"{kind}@")]:
            self.known.discard(stale)
        return marker

    def forget_children(self) -> None:
        self.known.clear()
        self.fresh_services.clear()


class Memory:
    """Per-cluster memos plus the Pod create/delete expectations, keyed by ``namespace/name``."""

    def __init__(self, expectations: Expectations) -> None:
        self.expectations = expectations
        self.memos: Memos[ClusterMemo] = Memos(ClusterMemo)

    def forget(self, key: str) -> None:
        """The RayCluster ``key`` is gone: drop everything remembered about it."""
        self.memos.forget(key)
        self.expectations.delete(key)
