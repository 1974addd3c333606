"""A pod network on this host: Pod addresses from a pod CIDR that local clients can reach.

No real cluster has loopback Pod IPs, and kube-apiserver rejects loopback EndpointSlice
addresses, so simulated Pods get addresses from a pod CIDR (default ``10.244.0.0/16``, as kind
and flannel). Each simulator claims one block of it (a /24 by default) and makes the block
reachable with an "AnyIP" local route on ``lo`` (``ip route replace local BLOCK dev lo table
local``): every address of the block is then local to this host, so a Pod's runtime can bind it
and probes, the operator and tests connect to it, and no packet for it leaves the host.

Blocks never collide, across simulators and across processes (parallel test runs, a demo beside
a test suite): a block is claimed by an exclusive ``flock`` on a file named after it in a
host-wide directory, held while the simulator runs. The kernel drops the lock when the process
dies however it dies, so a crashed owner never keeps a block forever; its route may survive it
until the next claim sweeps it. A route is removed only by a process holding the block's lock, so
no process removes a route another one still uses.

Adding a route needs ``CAP_NET_ADMIN``. Without it the simulator falls back to a block of
``127.0.0.0/8`` (claimed the same way), says so once in its log, and the built-in API server must
be told explicitly to accept loopback EndpointSlice addresses (its
``accept_loopback_endpoint_addresses`` knob). A real kube-apiserver never accepts them, so real
mode requires the pod network (``require=True``) and fails with one line without it.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import os
import random
import shlex
import shutil
import socket
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from kuberay_py.envtest.sim.addresses import AddressAllocator
from kuberay_py.log import get_logger

__all__ = [
    "DEFAULT_POD_CIDR",
    "LOOPBACK_CIDR",
    "PodNetwork",
    "PodNetworkUnavailable",
    "claim_pod_network",
    "sweep_stale_routes",
]

log = get_logger("kuberay_py.envtest.sim.podnetwork")

DEFAULT_POD_CIDR = os.environ.get("KUBERAY_SIM_POD_CIDR", "10.244.0.0/16")
LOOPBACK_CIDR = "127.0.0.0/8"
LOCK_DIR = Path(os.environ.get("KUBERAY_SIM_POD_NETWORK_LOCKS", "/tmp/kuberay-pod-network"))
_fallback_reported = False


class PodNetworkUnavailable(RuntimeError):
    """This host gives no pod network (no ``CAP_NET_ADMIN``, no ``ip`` command) and one is required."""


@dataclass
class PodNetwork:
    """One claimed block of Pod addresses; :meth:`release` gives it back (idempotent)."""

    block: ipaddress.IPv4Network
    routed: bool  # True: a local route on lo; False: the loopback fallback
    route_command: Sequence[str] = ("ip",)
    _lock: IO[bytes] | None = field(default=None, repr=False)

    @property
    def loopback(self) -> bool:
        return not self.routed

    def allocator(self) -> AddressAllocator:
        """An allocator over the block's host addresses (the first one is left to the "node")."""
        hosts = self.block.num_addresses
        first = self.block.network_address + (2 if hosts > 4 else 1)
        last = self.block.broadcast_address - 1
        return AddressAllocator(str(first), str(last))

    @property
    def gateway(self) -> str:
        """The block's first address: where a Pod's traffic appears to come from, like a CNI bridge."""
        return str(self.block.network_address + 1)

    def release(self) -> None:
        if self._lock is None:
            return
        try:
            if self.routed:
                _route(self.route_command, "del", self.block)
        finally:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None
            log.info("pod network released", block=str(self.block))


def _route(command: Sequence[str], verb: str, block: ipaddress.IPv4Network) -> str | None:
    """Run ``ip route VERB local BLOCK dev lo table local``; the error text, or None on success."""
    if not command or shutil.which(command[0]) is None:
        return f"no {command[0] if command else 'ip'} command"
    try:
        done = subprocess.run(
            [*command, "route", verb, "local", str(block), "dev", "lo", "table", "local"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    return None if done.returncode == 0 else (done.stderr.strip() or f"exit {done.returncode}")


def _try_lock(block: ipaddress.IPv4Network) -> IO[bytes] | None:
    LOCK_DIR.mkdir(mode=0o1777, parents=True, exist_ok=True)
    name = str(block).replace("/", "_")
    f = open(LOCK_DIR / f"{name}.lock", "ab")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        return None
    return f


def _reachable(block: ipaddress.IPv4Network) -> bool:
    """Whether this process can bind an address of the block (the route really made it local)."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((str(block.network_address + 2), 0))
        return True
    return False


def sweep_stale_routes(cidr: str = DEFAULT_POD_CIDR, route_command: Sequence[str] = ("ip",)) -> list[str]:
    """Remove the local routes of ``cidr``'s blocks whose owner died without releasing them.

    A block's lock is free only when no live process holds it, so taking it proves the route is
    nobody's; it is removed while the lock is held, then the lock is let go. Returns the blocks
    swept.
    """
    network = ipaddress.ip_network(cidr)
    if not isinstance(network, ipaddress.IPv4Network):
        return []
    if not route_command or shutil.which(route_command[0]) is None:
        return []
    try:
        shown = subprocess.run(
            [*route_command, "route", "show", "table", "local", "type", "local"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    swept = []
    for line in shown.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == "local":
            parts = parts[1:]
        if len(parts) < 3 or parts[1] != "dev" or parts[2] != "lo" or "/" not in parts[0]:
            continue
        try:
            block = ipaddress.ip_network(parts[0])
        except ValueError:
            continue
        if not isinstance(block, ipaddress.IPv4Network) or not block.subnet_of(network):
            continue
        lock = _try_lock(block)
        if lock is None:
            continue  # a live simulator owns it
        try:
            if _route(route_command, "del", block) is None:
                swept.append(str(block))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            lock.close()
    if swept:
        log.info("removed pod network routes left by simulators that died", blocks=swept)
    return swept


def _claim(
    cidr: ipaddress.IPv4Network, prefix: int, rng: random.Random
) -> tuple[ipaddress.IPv4Network, IO[bytes]] | None:
    blocks = list(cidr.subnets(new_prefix=prefix)) if prefix > cidr.prefixlen else [cidr]
    if cidr.overlaps(ipaddress.ip_network("127.0.0.0/16")):
        blocks = [b for b in blocks if not b.overlaps(ipaddress.ip_network("127.0.0.0/16"))]
    start = rng.randrange(len(blocks)) if blocks else 0
    for block in blocks[start:] + blocks[:start]:
        lock = _try_lock(block)
        if lock is not None:
            return block, lock
    return None


def claim_pod_network(
    cidr: str = DEFAULT_POD_CIDR,
    *,
    block_prefix: int = 24,
    require: bool = False,
    route_command: Sequence[str] | None = None,
    rng: random.Random | None = None,
) -> PodNetwork:
    """Claim a free block of ``cidr`` and route it to ``lo``; fall back to loopback unless ``require``.

    The starting block is random, so processes starting together rarely try the same lock first.
    ``route_command`` defaults to ``$KUBERAY_SIM_ROUTE_COMMAND`` or ``ip`` (``false`` forces the
    loopback fallback, as on a host without the privilege).
    """
    if route_command is None:
        route_command = shlex.split(os.environ.get("KUBERAY_SIM_ROUTE_COMMAND", "ip"))
    rng = rng or random.Random()
    network = ipaddress.ip_network(cidr)
    if not isinstance(network, ipaddress.IPv4Network):
        raise ValueError(f"the pod CIDR must be IPv4, not {cidr}")
    if network.is_loopback:
        raise ValueError(f"the pod CIDR {cidr} is loopback; use a private range such as 10.244.0.0/16")
    sweep_stale_routes(cidr, route_command)
    claimed = _claim(network, max(block_prefix, network.prefixlen), rng)
    if claimed is None:
        problem = f"every /{block_prefix} block of {cidr} is claimed by another simulator"
    else:
        block, lock = claimed
        problem = _route(route_command, "replace", block) or ""
        if not problem and _reachable(block):
            log.info("pod network ready", block=str(block), route="local route on lo")
            return PodNetwork(block, True, route_command, lock)
        if not problem:
            _route(route_command, "del", block)
            problem = f"{block} is not bindable after adding the route"
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()
    if require:
        raise PodNetworkUnavailable(
            f"the simulator needs a pod network for a real kube-apiserver (it rejects loopback "
            f"endpoint addresses), and this host gave none: {problem} (adding a local route to lo "
            f"needs CAP_NET_ADMIN)"
        )
    fallback = _claim(ipaddress.IPv4Network(LOOPBACK_CIDR), 16, rng)
    if fallback is None:
        raise PodNetworkUnavailable("every 127.N.0.0/16 fallback block is claimed by another simulator")
    global _fallback_reported
    if not _fallback_reported:
        _fallback_reported = True
        log.warning(
            "no pod network on this host; simulated Pods get loopback addresses, which only the "
            "built-in API server accepts (accept_loopback_endpoint_addresses)",
            reason=problem,
            block=str(fallback[0]),
        )
    return PodNetwork(fallback[0], False, route_command, fallback[1])
