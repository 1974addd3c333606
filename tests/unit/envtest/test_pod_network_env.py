"""How an Environment hands out the pod network, and what it does without one."""

from __future__ import annotations

import ipaddress

import pytest

from kuberay_py.envtest import Environment
from kuberay_py.envtest.controlplane import Assets
from kuberay_py.envtest.sim.podnetwork import PodNetworkUnavailable


async def test_the_loopback_knob_is_off_by_default() -> None:
    async with Environment() as env:
        assert env.server is not None and env.server.accept_loopback_endpoint_addresses is False


async def test_without_a_pod_network_the_builtin_server_is_told_to_accept_loopback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KUBERAY_SIM_ROUTE_COMMAND", "false")
    async with Environment(simulate=True) as env:
        assert env.server is not None and env.server.accept_loopback_endpoint_addresses is True
        assert env.simulator.network.loopback


async def test_with_a_pod_network_loopback_stays_refused() -> None:
    async with Environment(simulate=True) as env:
        if env.simulator.network.loopback:
            pytest.skip("no pod network on this host (needs CAP_NET_ADMIN)")
        assert env.server is not None and env.server.accept_loopback_endpoint_addresses is False
        assert not ipaddress.ip_network(env.simulator.network.block).is_loopback


async def test_real_mode_without_a_pod_network_fails_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBERAY_SIM_ROUTE_COMMAND", "false")
    env = Environment(assets=Assets("/nonexistent/etcd", "/nonexistent/kube-apiserver"))
    env.server = None  # as after a real control plane started
    with pytest.raises(PodNetworkUnavailable) as caught:
        env.claim_pod_network()
    assert "\n" not in str(caught.value) and "real kube-apiserver" in str(caught.value)
