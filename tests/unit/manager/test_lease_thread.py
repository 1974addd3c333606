"""LeaseThread: the elector's coroutines run on another thread's loop, and the manager's awaits
keep their meaning there (results, errors, cancellation)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from kuberay_py.client import Client, ClientConfig
from kuberay_py.manager.lease_thread import LeaseThread

CONFIG = ClientConfig(host="http://127.0.0.1:9")  # never contacted


async def test_runs_on_its_own_thread_and_returns_the_result() -> None:
    lease = LeaseThread("lease-test", Client(CONFIG))

    async def where() -> int:
        await asyncio.sleep(0)
        return threading.get_ident()

    try:
        assert await lease.run(where) != threading.get_ident()
        assert await lease.run(where) == await lease.run(where)  # one thread, reused
    finally:
        await lease.close()


async def test_an_error_reaches_the_caller() -> None:
    lease = LeaseThread("lease-test", Client(CONFIG))

    async def fail() -> None:
        raise LookupError("lease gone")

    try:
        with pytest.raises(LookupError, match="lease gone"):
            await lease.run(fail)
    finally:
        await lease.close()


async def test_cancelling_the_await_cancels_the_coroutine_on_the_thread() -> None:
    lease = LeaseThread("lease-test", Client(CONFIG))
    started, cancelled = threading.Event(), threading.Event()

    async def hold_forever() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    task = asyncio.create_task(lease.run(hold_forever))
    try:
        await asyncio.to_thread(started.wait, 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await asyncio.to_thread(cancelled.wait, 10)
    finally:
        await lease.close()


async def test_close_ends_the_thread() -> None:
    lease = LeaseThread("lease-test-close", Client(CONFIG))

    async def noop() -> None:
        return None

    await lease.run(noop)
    assert any(t.name == "lease-test-close" for t in threading.enumerate())
    await lease.close()
    assert not any(t.name == "lease-test-close" for t in threading.enumerate())
    await lease.close()  # idempotent
