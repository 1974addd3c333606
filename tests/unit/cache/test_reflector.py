"""The informer's list/watch loop against a scripted server: no lost events, no busy loops."""

from __future__ import annotations

import asyncio
import random
import socket
from typing import Any

import structlog

from kuberay_py.cache import Informer
from kuberay_py.client import Client, ClientConfig, resources
from kuberay_py.clock import FakeClock
from tests.running import running

from .conftest import FakeApi, Recorder, until


def informer(client: Client, clock: FakeClock, **kw: Any) -> tuple[Informer, Recorder]:
    inf = Informer(client, resources.PODS, namespace="ns", clock=clock, rng=random.Random(7), **kw)
    rec = Recorder()
    inf.add_event_handler(rec)
    return inf, rec


def warned(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in logs if e["log_level"] in ("warning", "error")]


def store_state(inf: Informer) -> dict[str, str]:
    return {k: inf.store.get(k)["metadata"]["resourceVersion"] for k in inf.store.keys()}  # type: ignore[index]


def server_state(api: FakeApi) -> dict[str, str]:
    return {k: o["metadata"]["resourceVersion"] for k, o in api.objects.items()}


async def test_initial_list_is_paginated_and_delivered_as_initial(api: FakeApi, client: Client) -> None:
    for i in range(1001):
        api.create(f"p{i:04d}")
    inf, rec = informer(client, FakeClock())
    async with running(inf):
        await asyncio.wait_for(inf.wait_for_sync(), 5)
        assert [r.get("limit") for r in api.list_requests] == ["500", "500", "500"]
        assert [r.get("continue") for r in api.list_requests] == [None, "500", "1000"]
        assert len(rec.of("add")) == 1001 and all(e[3] is True for e in rec.of("add"))
        assert store_state(inf) == server_state(api)
        # managedFields is stripped on the way in.
        assert all("managedFields" not in o["metadata"] for o in inf.store.list())


async def test_watch_starts_at_list_version_with_bookmarks_and_random_timeout(
    api: FakeApi, client: Client
) -> None:
    api.create("a")
    inf, _rec = informer(client, FakeClock())
    async with running(inf):
        await until(lambda: bool(api.watchers))
        q = api.watch_requests[0]
        assert q["resourceVersion"] == str(api.rv)
        assert q["allowWatchBookmarks"] == "true" and q["watch"] == "true"
        assert 300 <= int(q["timeoutSeconds"]) < 600


async def test_create_update_delete_are_delivered_in_order(api: FakeApi, client: Client) -> None:
    api.create("a")
    inf, rec = informer(client, FakeClock())
    async with running(inf):
        await until(lambda: bool(api.watchers))
        api.create("b")
        api.modify("a", n=1)
        api.remove("b")
        await rec.wait_for(lambda ev: len(ev) == 4)
        assert rec.events[1:] == [
            ("add", "ns/b", "102", False),
            ("update", "ns/a", "101", "103"),
            ("delete", "ns/b", "104"),
        ]
        assert store_state(inf) == server_state(api)
        assert all("managedFields" not in o["metadata"] for o in inf.store.list())


async def test_bookmark_advances_the_resume_version(api: FakeApi, client: Client) -> None:
    api.create("a")
    inf, _rec = informer(client, FakeClock())
    async with running(inf):
        await until(lambda: bool(api.watchers))
        api.rv = 500  # the server's version moved on for objects we do not watch
        api.bookmark()
        api.close_watches()
        await until(lambda: len(api.watch_requests) == 2)
        assert api.watch_requests[1]["resourceVersion"] == "500"
        assert len(api.list_requests) == 1  # a normal watch end resumes; it does not relist


async def test_410_error_event_relists_and_delivers_the_diff(api: FakeApi, client: Client) -> None:
    for name in ("a", "b", "c"):
        api.create(name)
    inf, rec = informer(client, FakeClock())
    async with running(inf):
        await until(lambda: bool(api.watchers))
        api.deliver = False  # what happens now is never streamed: only the relist can show it
        api.modify("a", n=5)
        api.remove("b")
        d = api.create("d")
        c_rv = api.objects["ns/c"]["metadata"]["resourceVersion"]
        api.deliver = True
        with structlog.testing.capture_logs() as logs:
            api.expire()
            await rec.wait_for(lambda ev: len(ev) == 6)
        assert sorted(rec.events[3:]) == sorted(
            [
                ("update", "ns/a", "101", api.objects["ns/a"]["metadata"]["resourceVersion"]),
                ("delete", "ns/b", "102"),  # the last state we knew
                ("add", "ns/d", d["metadata"]["resourceVersion"], False),
            ]
        )
        assert store_state(inf) == server_state(api)
        assert api.objects["ns/c"]["metadata"]["resourceVersion"] == c_rv  # unchanged: no event for c
        assert len(api.list_requests) == 2
        assert any(e["event"] == "watch_expired_relisting" for e in logs)
        # ... and the new watch starts at the relist's version.
        await until(lambda: len(api.watch_requests) == 2)
        assert api.watch_requests[1]["resourceVersion"] == str(api.rv)


async def test_410_on_watch_start_relists(api: FakeApi, client: Client) -> None:
    api.create("a")
    clock = FakeClock()
    inf, rec = informer(client, clock)
    async with running(inf):
        await until(lambda: bool(api.watchers))
        api.deliver = False
        api.remove("a")
        api.create("b")
        api.compact()
        api.deliver = True
        api.cut()  # the resume from the old version now gets HTTP 410
        await until(lambda: clock.sleepers == 1)  # back-off after the cut
        await clock.advance(2.0)
        await rec.wait_for(lambda ev: len(ev) == 3)
        assert [e[:2] for e in rec.events[1:]] == [("delete", "ns/a"), ("add", "ns/b")]
        assert len(api.list_requests) == 2
        assert store_state(inf) == server_state(api)


async def test_cut_watch_resumes_from_last_version_without_losing_events(
    api: FakeApi, client: Client
) -> None:
    api.create("a")
    clock = FakeClock()
    inf, rec = informer(client, clock)
    async with running(inf):
        await until(lambda: bool(api.watchers))
        api.create("b")
        await rec.wait_for(lambda ev: len(ev) == 2)
        api.deliver = False
        api.modify("a", n=1)
        api.create("c")
        api.deliver = True
        api.cut()
        await until(lambda: clock.sleepers == 1)
        await clock.advance(2.0)
        await rec.wait_for(lambda ev: len(ev) == 4)
        assert [e[:2] for e in rec.events[2:]] == [("update", "ns/a"), ("add", "ns/c")]
        assert len(api.list_requests) == 1
        assert store_state(inf) == server_state(api)


async def test_garbage_in_stream_logs_backs_off_and_rewatches(api: FakeApi, client: Client) -> None:
    api.create("a")
    clock = FakeClock()
    inf, rec = informer(client, clock)
    async with running(inf):
        await until(lambda: bool(api.watchers))
        with structlog.testing.capture_logs() as logs:
            api.garbage()
            await until(lambda: clock.sleepers == 1)
        failed = [e for e in logs if e["event"] == "watch_failed"]
        assert len(failed) == 1
        assert failed[0]["reason"] == "GarbageStream" and "502 Bad Gateway" in failed[0]["error"]
        assert failed[0]["log_level"] == "warning" and 0.8 <= failed[0]["retry_in_s"] <= 1.6
        assert len(api.watch_requests) == 1  # nothing happens until the back-off elapses
        api.create("b")
        await clock.advance(failed[0]["retry_in_s"] + 0.001)  # logged rounded to ms
        await rec.wait_for(lambda ev: len(ev) == 2)
        assert rec.events[1][:2] == ("add", "ns/b")
        assert len(api.list_requests) == 1


async def test_403_on_watch_backs_off_exponentially_without_busy_looping(
    api: FakeApi, client: Client
) -> None:
    api.create("a")
    forbidden = {
        "kind": "Status",
        "code": 403,
        "reason": "Forbidden",
        "message": 'cannot watch resource "pods"',
    }
    api.watch_faults = [(403, forbidden)] * 5
    clock = FakeClock()
    inf, rec = informer(client, clock)
    delays: list[float] = []
    with structlog.testing.capture_logs() as logs:
        async with running(inf):
            for attempt in range(1, 6):
                await until(lambda n=attempt: clock.sleepers == 1 and len(warned(logs)) == n)
                assert len(api.watch_requests) == attempt  # exactly one request per back-off step
                delays.append(warned(logs)[-1]["retry_in_s"])
                await clock.advance(delays[-1] + 0.001)
            api.create("b")
            await rec.wait_for(lambda ev: ("add", "ns/b") in [e[:2] for e in ev])
    failed = [e for e in logs if e["event"] == "watch_failed"]
    assert len(failed) == 5
    assert all(
        e["log_level"] == "error" and e["code"] == 403 and "cannot watch" in e["error"] for e in failed
    )
    for n, delay in enumerate(delays):
        base = 0.8 * 2**n
        assert base <= delay <= min(30.0, 2 * base)
    assert len(api.list_requests) == 1


async def test_watch_closed_at_once_is_backed_off(api: FakeApi, client: Client) -> None:
    api.watch_faults = [(200, None)] * 3
    clock = FakeClock()
    inf, _rec = informer(client, clock)
    with structlog.testing.capture_logs() as logs:
        async with running(inf):
            for attempt in range(1, 4):
                await until(lambda n=attempt: clock.sleepers == 1 and len(warned(logs)) == n)
                assert len(api.watch_requests) == attempt
                await clock.advance(warned(logs)[-1]["retry_in_s"] + 0.001)
            await until(lambda: bool(api.watchers))
    delays = [e["retry_in_s"] for e in warned(logs)]
    assert [e["event"] for e in warned(logs)] == ["watch_closed_immediately"] * 3
    assert delays[0] < delays[1] < delays[2]


async def test_429_waits_at_least_retry_after(api: FakeApi, client: Client) -> None:
    api.watch_faults = [
        (
            429,
            {"kind": "Status", "code": 429, "reason": "TooManyRequests", "details": {"retryAfterSeconds": 7}},
        )
    ]
    clock = FakeClock()
    inf, _rec = informer(client, clock)
    with structlog.testing.capture_logs() as logs:
        async with running(inf):
            await until(lambda: clock.sleepers == 1)
            await clock.advance(6.9)
            assert len(api.watch_requests) == 1
            await clock.advance(0.1)
            await until(lambda: bool(api.watchers))
    assert warned(logs)[0]["retry_in_s"] == 7


async def test_unreachable_server_retries_with_capped_backoff() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    clock = FakeClock()
    async with Client(ClientConfig(host=f"http://127.0.0.1:{port}")) as c:
        inf, _rec = informer(c, clock)
        with structlog.testing.capture_logs() as logs:
            async with running(inf):
                for attempt in range(1, 10):
                    await until(lambda n=attempt: clock.sleepers == 1 and len(warned(logs)) == n)
                    await clock.advance(warned(logs)[-1]["retry_in_s"] + 0.001)
    # One attempt per back-off step (a tenth may start as the last step elapses), never more.
    assert [e["event"] for e in warned(logs)] in (["list_failed"] * 9, ["list_failed"] * 10)
    assert all(f"127.0.0.1:{port}" in e["error"] and e["code"] == 0 for e in logs)
    assert max(e["retry_in_s"] for e in logs) == 30.0  # capped
    assert not inf.has_synced()


async def test_resync_redelivers_from_memory(api: FakeApi, client: Client) -> None:
    api.create("a")
    api.create("b")
    clock = FakeClock()
    inf, rec = informer(client, clock, resync_period=60.0)
    assert inf.resync_period is not None and 54.0 <= inf.resync_period < 66.0
    async with running(inf):
        await until(lambda: bool(api.watchers))
        requests = len(api.list_requests) + len(api.watch_requests)
        await clock.advance(inf.resync_period)
        await rec.wait_for(lambda ev: len(ev) == 4)
        assert sorted(rec.events[2:]) == [("update", "ns/a", "101", "101"), ("update", "ns/b", "102", "102")]
        assert len(api.list_requests) + len(api.watch_requests) == requests


async def test_handler_errors_do_not_stop_delivery(api: FakeApi, client: Client) -> None:
    class Broken:
        def on_add(self, obj: dict[str, Any], is_initial: bool) -> None:
            raise RuntimeError("boom")

        def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
            raise RuntimeError("boom")

        def on_delete(self, obj: dict[str, Any]) -> None:
            raise RuntimeError("boom")

    inf = Informer(client, resources.PODS, namespace="ns", clock=FakeClock())
    inf.add_event_handler(Broken())
    rec = Recorder()
    inf.add_event_handler(rec)
    with structlog.testing.capture_logs() as logs:
        async with running(inf):
            await until(lambda: bool(api.watchers))
            api.create("a")
            api.modify("a", n=2)
            await rec.wait_for(lambda ev: len(ev) == 2)
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["event_handler_failed"] * 2


async def test_late_handler_gets_the_store_replayed_as_initial(api: FakeApi, client: Client) -> None:
    api.create("a")
    inf, _ = informer(client, FakeClock())
    async with running(inf):
        await asyncio.wait_for(inf.wait_for_sync(), 5)
        late = Recorder()
        inf.add_event_handler(late)
        assert late.events == [("add", "ns/a", "101", True)]
