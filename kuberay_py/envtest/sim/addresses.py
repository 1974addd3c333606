"""Pod addresses within one claimed block of the pod network.

Every simulated Pod owns a distinct address and binds its listeners there, which is what lets two
Pods both listen on port 8000, as they would in a cluster. The block comes from
:func:`~kuberay_py.envtest.sim.podnetwork.claim_pod_network` (a /24 of the pod CIDR, or a
127.N.0.0/16 block without a pod network). A freed address goes to the back of the line, so a
quickly recreated Pod does not inherit a stale address that clients may still be talking to.
"""

from __future__ import annotations

import ipaddress
from collections import deque

__all__ = ["AddressAllocator", "AddressPoolExhausted"]


class AddressPoolExhausted(RuntimeError):
    """Every address in the pool is in use."""


class AddressAllocator:
    def __init__(self, first: str, last: str) -> None:
        self._next = int(ipaddress.IPv4Address(first))
        self._last = int(ipaddress.IPv4Address(last))
        self.first, self.last = first, last
        if self._next > self._last:
            raise ValueError(f"empty address range {first}..{last}")
        self._freed: deque[int] = deque()
        self._in_use: set[int] = set()

    def allocate(self) -> str:
        while self._next <= self._last:
            candidate = self._next
            self._next += 1
            if candidate & 0xFF in (0, 255) or candidate in self._in_use:
                continue
            self._in_use.add(candidate)
            return str(ipaddress.IPv4Address(candidate))
        while self._freed:
            candidate = self._freed.popleft()
            if candidate not in self._in_use:
                self._in_use.add(candidate)
                return str(ipaddress.IPv4Address(candidate))
        raise AddressPoolExhausted(f"no free pod address left in {self.first}..{self.last}")

    def reserve(self, address: str) -> bool:
        """Claim a specific address (a Pod that already had one when the simulator started).

        Refused for an address outside this block: it belonged to another simulator's block,
        which this host may no longer route locally.
        """
        value = int(ipaddress.IPv4Address(address))
        first = int(ipaddress.IPv4Address(self.first))
        if value in self._in_use or not first <= value <= self._last:
            return False
        self._in_use.add(value)
        return True

    def free(self, address: str) -> None:
        value = int(ipaddress.IPv4Address(address))
        if value in self._in_use:
            self._in_use.remove(value)
            self._freed.append(value)

    def in_use(self, address: str) -> bool:
        return int(ipaddress.IPv4Address(address)) in self._in_use

    def __len__(self) -> int:
        return len(self._in_use)
