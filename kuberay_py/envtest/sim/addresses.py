"""Pod addresses on the loopback network.

Linux routes all of 127.0.0.0/8 to ``lo``, so every simulated Pod can own a distinct address and
bind its listeners there without any network setup; this is what lets two Pods both listen on
port 8000, as they would in a cluster. Addresses come from 127.1.0.1 upwards (127.0.x.y is left
to the host's own services) and a freed address goes to the back of the line, so a quickly
recreated Pod does not inherit a stale address that clients may still be talking to.
"""

from __future__ import annotations

import ipaddress
import itertools
import random
from collections import deque

__all__ = ["AddressAllocator", "AddressPoolExhausted", "random_block"]


_block_sequence = itertools.count(random.Random().randrange(254))


def random_block(rng: random.Random | None = None) -> tuple[str, str]:
    """A 127.N.0.0/16 block (N in 1..254) for one simulator.

    Across processes sharing the host's loopback (parallel test runs, a demo beside a test suite)
    the starting block is random, so they rarely meet; within one process consecutive simulators
    take consecutive blocks, so up to 254 live simulators never hand out the same address.
    Passing ``rng`` picks a block at random instead (deterministic tests).
    """
    n = rng.randint(1, 254) if rng is not None else next(_block_sequence) % 254 + 1
    return f"127.{n}.0.1", f"127.{n}.255.254"


class AddressPoolExhausted(RuntimeError):
    """Every address in the pool is in use."""


class AddressAllocator:
    def __init__(self, first: str = "127.1.0.1", last: str = "127.254.255.254") -> None:
        self._next = int(ipaddress.IPv4Address(first))
        self._last = int(ipaddress.IPv4Address(last))
        if not ipaddress.IPv4Address(first).is_loopback or not ipaddress.IPv4Address(last).is_loopback:
            raise ValueError("pod addresses must be on 127.0.0.0/8")
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
        raise AddressPoolExhausted("no free pod address left on 127.0.0.0/8")

    def reserve(self, address: str) -> bool:
        """Claim a specific address (a Pod that already had one when the simulator started)."""
        value = int(ipaddress.IPv4Address(address))
        if value in self._in_use:
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
