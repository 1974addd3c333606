"""The Manager against envtest: readiness gated on cache sync, SIGTERM drain, aggregated Events."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
from typing import Any

import aiohttp
import pytest

from kuberay_py.client import Client, resources
from kuberay_py.controller import Request, Result
from kuberay_py.envtest import Environment
from kuberay_py.manager import Manager, ManagerOptions
from tests import polling

WAIT = 20.0  # bound for eventual consistency on a loaded machine; not a performance assertion


# Any error fails at once: these checks read objects that already exist.
until = functools.partial(polling.eventually, timeout=WAIT, tolerate=())


async def probe(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as s, s.get(url) as resp:
        return resp.status, await resp.text()


class Patcher:
    """Marks each ConfigMap ``done``; the one named ``slow`` waits for the test's go-ahead first."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.entered = asyncio.Event()
        self.go = asyncio.Event()

    async def reconcile(self, request: Request) -> Result:
        if request.name == "slow":
            self.entered.set()
            await self.go.wait()
        patch = {"data": {"done": "yes"}}
        await self.client.patch(resources.CONFIGMAPS, request.name, patch, request.namespace)
        return Result()


def options(namespace: str, **kw: Any) -> ManagerOptions:
    base: dict[str, Any] = {
        "metrics_bind_address": "0",
        "health_probe_bind_address": "127.0.0.1:0",
        "namespaces": [namespace],
    }
    base.update(kw)
    return ManagerOptions(**base)


@pytest.mark.builtin_only(reason="fails every list of the watched kind with an injected 500, then recovers")
async def test_readyz_is_not_ready_until_the_caches_have_synced(
    envtest: Environment, k8s: Client, namespace: str
) -> None:
    assert envtest.server is not None
    fault = envtest.server.inject("GET", rf"/api/v1/namespaces/{namespace}/configmaps$", 500, count=-1)
    mgr = Manager(envtest.client_config, options(namespace))
    mgr.controller("readyz-gate").for_(resources.CONFIGMAPS).complete(Patcher(mgr.client))
    run = asyncio.create_task(mgr.run(install_signal_handlers=False))
    try:
        status, body = await until(lambda: _probe_if_up(mgr, "/readyz"), "a readiness answer")
        assert status == 500 and "[-]informer-sync failed: reason withheld" in body
        assert (await probe(f"{mgr.health_url}/healthz"))[0] == 200  # alive while unready
        assert not mgr.elected.is_set()
        assert fault.hits >= 1
        fault.remaining = 0  # the API server recovers
        await until(lambda: _ok(f"{mgr.health_url}/readyz"), "readiness after the list succeeds")
        await asyncio.wait_for(mgr.elected.wait(), WAIT)
    finally:
        mgr.stop()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(run, WAIT)


async def _probe_if_up(mgr: Manager, path: str) -> tuple[int, str] | None:
    if mgr.health_url is None:
        return None
    try:
        return await probe(mgr.health_url + path)
    except aiohttp.ClientConnectionError:
        return None


async def _ok(url: str) -> bool:
    return (await probe(url))[0] == 200


async def test_sigterm_finishes_the_inflight_reconcile_releases_the_lease_and_returns(
    envtest: Environment, k8s: Client, namespace: str
) -> None:
    mgr = Manager(
        envtest.client_config,
        options(
            namespace,
            leader_election=True,
            leader_election_namespace=namespace,
            leader_election_id="drain",
            leader_election_identity="drainer",
        ),
    )
    patcher = Patcher(mgr.client)
    mgr.controller("drain").for_(resources.CONFIGMAPS).complete(patcher)
    run = asyncio.create_task(mgr.run(install_signal_handlers=True))
    try:
        await asyncio.wait_for(mgr.elected.wait(), WAIT)
        await k8s.create(resources.CONFIGMAPS, {"metadata": {"name": "slow"}}, namespace)
        await asyncio.wait_for(patcher.entered.wait(), WAIT)

        os.kill(os.getpid(), signal.SIGTERM)
        await until(lambda: _status_is(f"{mgr.health_url}/readyz", 500), "readyz to turn unready")
        await k8s.create(resources.CONFIGMAPS, {"metadata": {"name": "after-sigterm"}}, namespace)
        assert not run.done()  # waiting for the in-flight reconcile
        patcher.go.set()
        await asyncio.wait_for(run, WAIT)  # returned normally: exit code 0
    finally:
        patcher.go.set()
        if not run.done():
            mgr.stop()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(run, WAIT)
    slow = await k8s.get(resources.CONFIGMAPS, "slow", namespace)
    assert slow["data"] == {"done": "yes"}  # drained, not cancelled
    later = await k8s.get(resources.CONFIGMAPS, "after-sigterm", namespace)
    assert not later.get("data")  # nothing new started after the signal
    lease = await k8s.get(resources.LEASES, "drain", namespace)
    assert lease["spec"]["holderIdentity"] == ""  # released for a fast hand-over


async def _status_is(url: str, code: int) -> bool:
    return (await probe(url))[0] == code


async def test_repeated_events_are_one_events_k8s_io_object_with_a_series_count(
    envtest: Environment, k8s: Client, namespace: str
) -> None:
    mgr = Manager(envtest.client_config, options(namespace))
    run = asyncio.create_task(mgr.run(install_signal_handlers=False))
    try:
        await asyncio.wait_for(mgr.elected.wait(), WAIT)
        cm = await k8s.create(
            resources.CONFIGMAPS,
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "evented"}},
            namespace,
        )
        cm.setdefault("apiVersion", "v1")
        cm.setdefault("kind", "ConfigMap")
        recorder = mgr.event_recorder("kuberay-operator")
        for _ in range(3):
            recorder.event(cm, "Warning", "FailedCreate", "quota exceeded")
            await mgr.events.wait_idle()
        recorder.event(cm, "Normal", "Created", "created head pod")
        await mgr.events.flush()  # the paced count update too

        events = (await k8s.list(resources.EVENTS, namespace))["items"]
        failed = [e for e in events if e["reason"] == "FailedCreate"]
        assert len(failed) == 1
        ev = failed[0]
        assert ev["series"]["count"] == 3
        assert ev["regarding"]["kind"] == "ConfigMap" and ev["regarding"]["name"] == "evented"
        assert ev["regarding"]["uid"] == cm["metadata"]["uid"]
        assert ev["type"] == "Warning" and ev["note"] == "quota exceeded" and ev["action"] == "FailedCreate"
        assert ev["reportingController"] == "kuberay-operator"
        assert ev["reportingInstance"].startswith("kuberay-operator-")
        assert ev["eventTime"]
        assert [e["reason"] for e in events if e["reason"] == "Created"] == ["Created"]
    finally:
        mgr.stop()
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(run, WAIT)
