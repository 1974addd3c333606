"""What runs "inside" a simulated Pod.

The simulator knows nothing about the workload. A :class:`PodRuntime` is told when a Pod's
containers start (with the address the kubelet gave the Pod) and when they stop (deletion, or a
liveness restart, which is a stop followed by a start). It typically binds listeners on that
address so the Pod's probes and its Service's clients reach something real.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["PodRuntime"]


@runtime_checkable
class PodRuntime(Protocol):
    async def start(self, pod: dict[str, Any], ip: str) -> None:
        """The Pod's containers start on ``ip``; raising marks them as failing to start."""

    async def stop(self, pod: dict[str, Any], ip: str) -> None:
        """The Pod's containers stop; release everything bound to ``ip``."""


# A runtime may also define ``async def drain(pod, ip) -> None``: on graceful deletion the kubelet
# awaits it (cancelling it at the end of the Pod's grace period) before ``stop``, the way a
# process gets SIGTERM and its grace period before SIGKILL. Liveness restarts and simulator
# shutdown call ``stop`` directly.
