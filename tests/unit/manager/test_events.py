"""Event recorder: events.k8s.io/v1 bodies, series aggregation and pacing, bounded async buffer, failures."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from prometheus_client import REGISTRY

from kuberay_py.client import Client, NotFound, ServerError, resources
from kuberay_py.clock import FakeClock, settle
from kuberay_py.manager.events import EventBroadcaster


class FakeEventsClient:
    def __init__(self) -> None:
        self.events: dict[tuple[str, str], dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []
        self.fail: list[Exception] = []
        self.gate: asyncio.Event | None = None

    async def _maybe_fail(self) -> None:
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            raise self.fail.pop(0)

    async def create(self, res: Any, body: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
        assert res is resources.EVENTS
        await self._maybe_fail()
        self.calls.append(("create", body["metadata"]["name"]))
        self.events[(namespace or "", body["metadata"]["name"])] = body
        return body

    async def patch(
        self, res: Any, name: str, body: dict[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        assert res is resources.EVENTS
        await self._maybe_fail()
        self.calls.append(("patch", name))
        key = (namespace or "", name)
        if key not in self.events:
            raise NotFound(404, "NotFound", f'events.events.k8s.io "{name}" not found')
        self.events[key] = {**self.events[key], **body}
        return self.events[key]


POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "head-0", "namespace": "ns1", "uid": "u-1", "resourceVersion": "7"},
}


@pytest.fixture
async def env() -> AsyncIterator[tuple[FakeEventsClient, EventBroadcaster, FakeClock]]:
    client, clock = FakeEventsClient(), FakeClock()
    b = EventBroadcaster(cast(Client, client), clock=clock, max_pending=3)
    task = asyncio.create_task(b.run())
    yield client, b, clock
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_first_event_creates_an_events_k8s_io_v1_event(env: Any) -> None:
    client, b, _ = env
    b.recorder("kuberay-operator").event(POD, "Normal", "CreatedHeadPod", "Created head pod head-0")
    await b.wait_idle()
    ((ns, name),) = client.events
    ev = client.events[(ns, name)]
    assert ns == "ns1" and name.startswith("head-0.")
    assert ev["apiVersion"] == "events.k8s.io/v1" and ev["kind"] == "Event"
    assert ev["regarding"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "head-0",
        "namespace": "ns1",
        "uid": "u-1",
        "resourceVersion": "7",
    }
    assert ev["reason"] == "CreatedHeadPod" and ev["action"] == "CreatedHeadPod"
    assert ev["note"] == "Created head pod head-0" and ev["type"] == "Normal"
    assert ev["reportingController"] == "kuberay-operator"
    assert ev["reportingInstance"].startswith("kuberay-operator-")
    assert ev["eventTime"] == "2026-01-01T00:00:00.000000Z"
    assert "series" not in ev


async def test_repeats_within_the_window_patch_the_series_instead_of_creating(env: Any) -> None:
    client, b, clock = env
    rec = b.recorder("kuberay-operator")
    rec.event(POD, "Warning", "FailedToCreate", "quota exceeded")
    await b.wait_idle()
    await clock.advance(30)
    rec.event(POD, "Warning", "FailedToCreate", "quota exceeded")
    await b.wait_idle()
    assert [c for c, _ in client.calls] == ["create"] and b.deferred == 1  # a Warning's count waits
    await clock.advance(30)
    rec.event(POD, "Warning", "FailedToCreate", "quota exceeded")
    await clock.advance(329)
    await b.wait_idle()
    assert len(client.calls) == 1  # held until 6 min after the repeat that needed it
    await clock.advance(1)
    await b.wait_idle()
    assert [c for c, _ in client.calls] == ["create", "patch"] and b.deferred == 0
    (ev,) = client.events.values()
    assert ev["series"] == {"count": 3, "lastObservedTime": "2026-01-01T00:01:00.000000Z"}


async def test_a_burst_collapses_into_one_write_with_the_latest_count(env: Any) -> None:
    client, b, _ = env
    rec = b.recorder("c")
    for _ in range(50):
        rec.event(POD, "Normal", "Scaled", "same")
    await b.wait_idle()
    assert [c for c, _ in client.calls] == ["create"]
    (ev,) = client.events.values()
    assert ev["series"]["count"] == 50


async def test_repeats_during_an_inflight_write_become_one_follow_up_patch(env: Any) -> None:
    client, b, _ = env
    client.gate = asyncio.Event()
    rec = b.recorder("c")
    rec.event(POD, "Normal", "Scaled", "same")
    await settle()  # the create is now in flight, held at the gate
    for _ in range(49):
        rec.event(POD, "Normal", "Scaled", "same")
    client.gate.set()
    await b.wait_idle()
    assert [c for c, _ in client.calls] == ["create", "patch"]
    (ev,) = client.events.values()
    assert ev["series"]["count"] == 50


async def test_one_reason_on_one_object_is_one_event_whatever_the_notes(env: Any) -> None:
    """client-go's series key has no note: "Created worker Pod a", "... b" are one Event."""
    client, b, _ = env
    rec = b.recorder("c")
    rec.event(POD, "Normal", "CreatedWorkerPod", "Created worker Pod ns1/w-a")
    await b.wait_idle()
    client.gate = asyncio.Event()
    for i in range(3):
        rec.event(POD, "Normal", "CreatedWorkerPod", f"Created 2 worker Pods: ns1/w-{i}, ns1/w-{i}x")
        await settle()  # the first repeat's patch is in flight; the others join one follow-up
    client.gate.set()
    await b.wait_idle()
    assert [c for c, _ in client.calls] == ["create", "patch", "patch"]
    (ev,) = client.events.values()
    assert ev["note"] == "Created worker Pod ns1/w-a" and ev["series"]["count"] == 4


async def test_different_reason_type_or_object_are_separate_events(env: Any) -> None:
    client, b, _ = env
    rec = b.recorder("c")
    rec.event(POD, "Normal", "A", "one")
    rec.event(POD, "Normal", "B", "one")
    rec.event(POD, "Warning", "A", "one")
    await b.wait_idle()  # max_pending is 3 here
    other = {**POD, "metadata": {**POD["metadata"], "name": "head-1", "uid": "u-2"}}
    rec.event(other, "Normal", "A", "one")
    await b.wait_idle()
    assert [c for c, _ in client.calls] == ["create"] * 4


async def test_a_persistent_failure_costs_one_create_then_a_write_per_6_minutes(
    env: Any,
) -> None:
    """A reconcile failing every 5 s for an hour: 720 Warnings, one Event, ~10 writes, count exact."""
    client, b, clock = env
    rec = b.recorder("c")
    write_times: list[float] = []
    for _ in range(720):
        rec.event(POD, "Warning", "FailedToCreateHeadPod", "pods is forbidden")
        await b.wait_idle()
        write_times += [clock.now()] * (len(client.calls) - len(write_times))
        await clock.advance(5.0)
    await b.flush()
    assert [c for c, _ in client.calls][:1] == ["create"]
    assert all(c == "patch" for c, _ in client.calls[1:])
    gaps = [later - earlier for earlier, later in itertools.pairwise(write_times)]
    assert gaps and min(gaps) >= 6 * 60  # at most one write per 6 minutes
    assert len(client.calls) <= 1 + 3600 / 360 + 1  # + the final flush
    (ev,) = client.events.values()
    assert ev["series"]["count"] == 720


async def test_normal_progress_steps_are_written_promptly_while_the_object_converges(env: Any) -> None:
    """A Normal series gets three prompt patches, then one per 10 minutes (or its final count)."""
    client, b, clock = env
    rec = b.recorder("c")
    rec.event(POD, "Normal", "CreatedService", "Created the service ns1/a")
    await b.wait_idle()
    for i in range(3):
        await clock.advance(10.0)
        rec.event(POD, "Normal", "CreatedService", f"Created the service ns1/{i}")
        await b.wait_idle()
    assert [c for c, _ in client.calls] == ["create", "patch", "patch", "patch"] and b.deferred == 0
    await clock.advance(10.0)
    rec.event(POD, "Normal", "CreatedService", "Created the service ns1/late")
    await b.wait_idle()
    assert b.deferred == 1 and len(client.calls) == 4


async def test_flush_writes_deferred_counts_at_once(env: Any) -> None:
    client, b, _ = env
    rec = b.recorder("c")
    rec.event(POD, "Warning", "A", "x")
    await b.wait_idle()
    rec.event(POD, "Warning", "A", "x")
    rec.event(POD, "Warning", "A", "x")
    await b.wait_idle()
    assert b.deferred == 1 and len(client.calls) == 1
    await asyncio.wait_for(b.flush(), 5)
    assert [c for c, _ in client.calls] == ["create", "patch"] and b.pending == 0
    (ev,) = client.events.values()
    assert ev["series"]["count"] == 3


def test_series_pacing_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="series_refresh"):
        EventBroadcaster(cast(Client, FakeEventsClient()), series_coalesce=10, series_refresh=5)
    with pytest.raises(ValueError, match="series_coalesce"):
        EventBroadcaster(cast(Client, FakeEventsClient()), series_coalesce=-1)


async def test_a_repeat_after_the_window_starts_a_new_event(env: Any) -> None:
    client, b, clock = env
    rec = b.recorder("c")
    rec.event(POD, "Normal", "A", "x")
    await b.wait_idle()
    await clock.advance(6 * 60 + 1)
    rec.event(POD, "Normal", "A", "x")
    await b.wait_idle()
    assert [c for c, _ in client.calls] == ["create", "create"]
    assert len(client.events) == 2


async def test_full_buffer_drops_and_counts_without_blocking(env: Any) -> None:
    client, b, _ = env
    client.gate = asyncio.Event()
    before = REGISTRY.get_sample_value("event_recorder_dropped_total", {"reason": "buffer_full"}) or 0.0
    rec = b.recorder("c")
    for i in range(6):  # max_pending=3; the writer holds one in flight
        rec.event(POD, "Normal", f"R{i}", "x")
    await settle()
    client.gate.set()
    await b.wait_idle()
    after = REGISTRY.get_sample_value("event_recorder_dropped_total", {"reason": "buffer_full"})
    assert after is not None and after - before >= 1
    assert 3 <= len(client.events) < 6


async def test_transient_failures_are_retried_and_permanent_ones_dropped(env: Any) -> None:
    client, b, clock = env
    client.fail = [ServerError(500, "InternalError", "etcd")]
    b.recorder("c").event(POD, "Normal", "A", "x")
    await settle()
    await clock.advance(1.0)
    await b.wait_idle()
    assert len(client.events) == 1
    client.fail = [ServerError(500, "InternalError", "etcd")] * 10
    b.recorder("c").event(POD, "Normal", "B", "y")
    for _ in range(5):
        await clock.advance(10.0)
    await b.wait_idle()
    assert len(client.events) == 1  # gave up on B after the retries, writer still alive
    client.fail = []
    b.recorder("c").event(POD, "Normal", "C", "z")
    await b.wait_idle()
    assert len(client.events) == 2


async def test_an_expired_event_is_recreated_when_its_series_continues(env: Any) -> None:
    client, b, _ = env
    rec = b.recorder("c")
    rec.event(POD, "Normal", "A", "x")
    await b.wait_idle()
    client.events.clear()  # the API server's 1 h event TTL removed it
    rec.event(POD, "Normal", "A", "x")
    await b.flush()
    assert [c for c, _ in client.calls] == ["create", "patch", "create"]
    (ev,) = client.events.values()
    assert ev["series"]["count"] == 2


def test_bad_calls_fail_loudly() -> None:
    b = EventBroadcaster(cast(Client, FakeEventsClient()), clock=FakeClock())
    rec = b.recorder("c")
    with pytest.raises(ValueError, match="Normal"):
        rec.event(POD, "Info", "A", "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="reason"):
        rec.event(POD, "Normal", "", "x")
    with pytest.raises(ValueError, match="kind"):
        rec.event({"metadata": {"name": "x"}}, "Normal", "A", "x")
    with pytest.raises(ValueError, match="component"):
        b.recorder("")


async def test_long_note_is_truncated_to_the_api_limit(env: Any) -> None:
    client, b, _ = env
    b.recorder("c").event(POD, "Warning", "A", "é" * 2000)
    await b.wait_idle()
    (ev,) = client.events.values()
    assert len(ev["note"].encode()) <= 1024 and ev["note"].endswith("...")


async def test_cluster_scoped_objects_get_events_in_default(env: Any) -> None:
    client, b, _ = env
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    b.recorder("c").event(node, "Normal", "A", "x")
    await b.wait_idle()
    ((ns, _),) = client.events
    assert ns == "default"
