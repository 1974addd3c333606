"""Where Serve puts replicas and which ones it stops, reduced to pure functions.

Placement follows Ray Serve's default spread scheduling: a replica goes to a node with enough free
CPU for its ``ray_actor_options.num_cpus`` and fewer than ``max_replicas_per_node`` replicas of its
deployment, preferring the node with the fewest replicas of that deployment, then the fewest
replicas overall, then a worker over the head. Downscaling follows
``DeploymentScheduler._get_replicas_to_stop``: replicas not yet running first, then replicas off
the head node, then those on the nodes with the fewest replicas (to free nodes), newest first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["NodeView", "ReplicaView", "choose_node", "choose_replicas_to_stop"]

_EPS = 1e-9


@dataclass(frozen=True)
class NodeView:
    node_id: str
    is_head: bool
    num_cpus: float
    used_cpus: float
    replicas_of_deployment: int
    replicas_total: int


@dataclass(frozen=True)
class ReplicaView:
    replica_id: str
    node_id: str | None
    running: bool
    created_seq: int


def choose_node(nodes: Sequence[NodeView], num_cpus: float, max_per_node: int | None) -> str | None:
    feasible = [
        n
        for n in nodes
        if n.num_cpus - n.used_cpus + _EPS >= num_cpus
        and (max_per_node is None or n.replicas_of_deployment < max_per_node)
    ]
    if not feasible:
        return None
    order = {n.node_id: i for i, n in enumerate(nodes)}
    best = min(
        feasible, key=lambda n: (n.replicas_of_deployment, n.replicas_total, n.is_head, order[n.node_id])
    )
    return best.node_id


def choose_replicas_to_stop(
    replicas: Sequence[ReplicaView], count: int, nodes: dict[str, NodeView], head_id: str | None
) -> list[str]:
    if count <= 0:
        return []

    def rank(r: ReplicaView) -> tuple[int, int, int, int]:
        if not r.running or r.node_id is None:
            return (0, 0, 0, -r.created_seq)
        on_head = 1 if r.node_id == head_id else 0
        total = nodes[r.node_id].replicas_total if r.node_id in nodes else 0
        return (1, on_head, total, -r.created_seq)

    return [r.replica_id for r in sorted(replicas, key=rank)[:count]]
