"""Event writes have their own QPS/burst bucket, as controller-runtime's recorder provider does.

Runs the Manager against envtest's API server on a stopped :class:`FakeClock`: a token bucket
refills only when that clock moves, so any request beyond a bucket's burst waits until the test
advances it. That makes "whose tokens did the event storm spend" observable without timing.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace

from kuberay_py.client import Client, resources
from kuberay_py.clock import FakeClock
from kuberay_py.envtest import Environment
from kuberay_py.manager import Manager, ManagerOptions
from tests.polling import eventually

WAIT = 20.0  # a hang guard on a loaded machine (the failure mode is waiting forever), not a timing check
BURST = 5


def _configmap(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


async def test_an_event_storm_does_not_spend_the_controllers_request_tokens(
    envtest: Environment, k8s: Client, namespace: str
) -> None:
    clock = FakeClock()
    config = replace(envtest.client_config, qps=1.0, burst=BURST)
    options = ManagerOptions(metrics_bind_address="0", health_probe_bind_address="0", namespaces=[namespace])
    mgr = Manager(config, options, clock=clock)
    assert mgr.events.client is not mgr.client
    run = asyncio.create_task(mgr.run(install_signal_handlers=False))
    try:
        await asyncio.wait_for(mgr.elected.wait(), WAIT)
        regarding = await k8s.create(resources.CONFIGMAPS, _configmap("regarding"), namespace)
        regarding.update(apiVersion="v1", kind="ConfigMap")
        recorder = mgr.event_recorder("storm")

        # The storm: BURST distinct series, one Event create each — a whole bucket's worth.
        for i in range(BURST):
            recorder.event(regarding, "Normal", f"Storm{i}", f"event {i}")
        await asyncio.wait_for(mgr.events.wait_idle(), WAIT)
        stored = (await k8s.list(resources.EVENTS, namespace))["items"]
        assert sorted(e["reason"] for e in stored) == [f"Storm{i}" for i in range(BURST)]

        # The controllers' client still holds its full burst: BURST writes go out with the clock
        # stopped. Had the events spent these tokens, the first create would wait forever.
        for i in range(BURST):
            await asyncio.wait_for(
                mgr.client.create(resources.CONFIGMAPS, _configmap(f"work-{i}"), namespace), WAIT
            )
        names = {cm["metadata"]["name"] for cm in (await k8s.list(resources.CONFIGMAPS, namespace))["items"]}
        assert {f"work-{i}" for i in range(BURST)} <= names

        # The event client is throttled by its own bucket, not unlimited: one more series waits
        # for a token, and is written once a second (qps=1) of virtual time has passed.
        sleepers = clock.sleepers
        recorder.event(regarding, "Warning", "OneTooMany", "over the burst")
        await eventually(lambda: clock.sleepers > sleepers, "the event writer waiting for a token", WAIT)
        stored = (await k8s.list(resources.EVENTS, namespace))["items"]
        assert "OneTooMany" not in {e["reason"] for e in stored}
        await clock.advance(1.0)
        await asyncio.wait_for(mgr.events.wait_idle(), WAIT)
        stored = (await k8s.list(resources.EVENTS, namespace))["items"]
        assert "OneTooMany" in {e["reason"] for e in stored}
    finally:
        mgr.stop()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(run, WAIT)


async def test_the_events_client_is_closed_with_the_manager(envtest: Environment, namespace: str) -> None:
    options = ManagerOptions(metrics_bind_address="0", health_probe_bind_address="0", namespaces=[namespace])
    mgr = Manager(envtest.client_config, options)
    run = asyncio.create_task(mgr.run(install_signal_handlers=False))
    await asyncio.wait_for(mgr.elected.wait(), WAIT)
    mgr.event_recorder("closer").event(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}, "Normal", "Hello", "hi"
    )
    await asyncio.wait_for(mgr.events.wait_idle(), WAIT)
    assert mgr.events_client.open_connections > 0  # the write opened the events client's pool
    mgr.stop()
    await asyncio.wait_for(run, WAIT)
    assert mgr.events_client.open_connections == 0
