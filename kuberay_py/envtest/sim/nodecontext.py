"""What the pod workers of one simulated node share, handed to them explicitly.

The :class:`~kuberay_py.envtest.sim.kubelet.Kubelet` routes Pod events to one
:class:`~kuberay_py.envtest.sim.podworker.PodWorker` per Pod UID; the workers need the node's
client, clock, runtime and address pool, a way to start background tasks, and a few pieces of
node-wide memory. They get exactly that through a ``NodeContext`` instead of the Kubelet itself,
so neither module imports the other's internals.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from kuberay_py.client import Client
from kuberay_py.clock import Clock
from kuberay_py.envtest.sim.addresses import AddressAllocator
from kuberay_py.envtest.sim.runtime import PodRuntime

__all__ = ["NodeContext"]


@dataclass
class NodeContext:
    client: Client
    clock: Clock
    runtime: PodRuntime | None
    scale: float  # probe delays and periods are multiplied by this
    node_name: str
    host_ip: str
    addresses: AddressAllocator
    # The probe HTTP session (opened on first use), a task starter the kubelet tracks and awaits
    # on shutdown, and "a probe round finished" for tests that step probes.
    session: Callable[[], aiohttp.ClientSession]
    spawn: Callable[[Coroutine[Any, Any, None]], asyncio.Task[None]]
    round_done: Callable[[str, str, str, str], None]
    # A worker that is done with its Pod: the kubelet drops it if it is still the current one.
    release_worker: Callable[[str, object], None]
    # UIDs of Pods this node stopped and asked the API to remove (finalizers may keep them listed).
    terminated: set[str] = field(default_factory=set)
    # False once the API server answered that it has no pods/binding subresource.
    binding_supported: bool = True
