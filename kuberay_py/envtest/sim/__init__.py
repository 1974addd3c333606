"""The opt-in cluster simulator: kubelet (addresses, phases, probes for real), EndpointSlice
controller and owner-reference garbage collection, all driven through the API."""

from typing import TYPE_CHECKING

from kuberay_py.envtest.sim.addresses import AddressAllocator, AddressPoolExhausted
from kuberay_py.envtest.sim.runtime import PodRuntime

if TYPE_CHECKING:
    from kuberay_py.envtest.sim.simulator import Simulator as Simulator

__all__ = ["AddressAllocator", "AddressPoolExhausted", "PodRuntime", "Simulator"]


def __getattr__(name: str) -> object:
    # Imported lazily: the Simulator needs the client and cache layers, while PodRuntime
    # implementations (and their tests) only need the protocol.
    if name == "Simulator":
        from kuberay_py.envtest.sim.simulator import Simulator

        return Simulator
    raise AttributeError(name)
