"""The simulator's pod network: blocks of a pod CIDR routed to lo, exclusive across processes.

The routed tests need CAP_NET_ADMIN (CI runs as root) and skip without it; every address they
bind or connect to is in a block this process just routed to ``lo``, so nothing leaves the host.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import subprocess
import sys

import pytest

from kuberay_py.envtest.sim.podnetwork import (
    PodNetwork,
    PodNetworkUnavailable,
    claim_pod_network,
    sweep_stale_routes,
)

TEST_CIDR = "10.245.250.0/23"  # two /24 blocks, away from the default 10.244.0.0/16


def _routed_or_skip(cidr: str = TEST_CIDR) -> PodNetwork:
    try:
        net = claim_pod_network(cidr, require=True)
    except PodNetworkUnavailable as e:
        pytest.skip(f"no pod network on this host: {e}")
    return net


def _local_routes() -> str:
    return subprocess.run(
        ["ip", "route", "show", "table", "local"], capture_output=True, text=True, check=True
    ).stdout


def test_a_routed_block_is_bindable_and_reachable_and_its_route_goes_with_release() -> None:
    net = _routed_or_skip()
    try:
        assert net.routed and net.block in list(ipaddress.ip_network(TEST_CIDR).subnets(new_prefix=24))
        ip = net.allocator().allocate()
        assert ipaddress.ip_address(ip) in net.block and not ipaddress.ip_address(ip).is_loopback
        with socket.create_server((ip, 0)) as server:
            port = server.getsockname()[1]
            with socket.create_connection((ip, port), timeout=5) as c:
                conn, _ = server.accept()
                c.sendall(b"ping")
                assert conn.recv(4) == b"ping"
                conn.close()
        assert f"local {net.block} dev lo" in _local_routes()
    finally:
        net.release()
    assert f"local {net.block} dev lo" not in _local_routes()
    net.release()  # idempotent


def test_another_process_never_gets_a_block_this_one_holds() -> None:
    net = _routed_or_skip()
    try:
        code = (
            "import json,sys\n"
            "from kuberay_py.envtest.sim.podnetwork import claim_pod_network, PodNetworkUnavailable\n"
            "try:\n"
            f"    n = claim_pod_network({TEST_CIDR!r}, require=True)\n"
            "    print(json.dumps({'block': str(n.block)})); n.release()\n"
            "except PodNetworkUnavailable as e:\n"
            "    print(json.dumps({'error': str(e)}))\n"
        )
        for _ in range(5):
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
            got = json.loads(next(line for line in out.stdout.splitlines() if line.startswith("{")))
            assert got.get("block") != str(net.block), got
            if "error" in got:
                assert "claimed by another simulator" in got["error"]
        assert f"local {net.block} dev lo" in _local_routes(), "the child never removed our route"
    finally:
        net.release()


def test_without_the_privilege_the_fallback_is_loopback_and_real_mode_fails_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    no_route = ("false",)  # stands in for `ip` failing with "Operation not permitted"
    with pytest.raises(PodNetworkUnavailable) as caught:
        claim_pod_network(TEST_CIDR, require=True, route_command=no_route)
    assert "\n" not in str(caught.value) and "CAP_NET_ADMIN" in str(caught.value)
    a = claim_pod_network(TEST_CIDR, route_command=no_route)
    b = claim_pod_network(TEST_CIDR, route_command=no_route)
    try:
        assert a.loopback and b.loopback and a.block != b.block
        assert a.block.is_loopback and a.block.prefixlen == 16
        assert a.block != ipaddress.ip_network("127.0.0.0/16"), "127.0.x.y is left to the host"
    finally:
        a.release()
        b.release()


def test_a_loopback_pod_cidr_is_refused() -> None:
    with pytest.raises(ValueError, match="loopback"):
        claim_pod_network("127.0.0.0/8")


def test_a_route_left_by_a_dead_owner_is_swept_and_a_live_ones_is_not() -> None:
    live = _routed_or_skip()
    try:
        code = (
            "import os\n"
            "from kuberay_py.envtest.sim.podnetwork import claim_pod_network\n"
            f"n = claim_pod_network({TEST_CIDR!r}, require=True)\n"
            "print(n.block, flush=True)\n"
            "os._exit(0)  # dies without releasing: the kernel drops the lock, the route stays\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        dead = next(line for line in out.stdout.splitlines() if line.startswith("10."))
        assert dead != str(live.block)
        assert f"local {dead} dev lo" in _local_routes()
        assert sweep_stale_routes(TEST_CIDR) == [dead]
        routes = _local_routes()
        assert f"local {dead} dev lo" not in routes
        assert f"local {live.block} dev lo" in routes, "a held block's route is never swept"
    finally:
        live.release()
