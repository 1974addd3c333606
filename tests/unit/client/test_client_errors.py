"""Status responses become typed errors; 429 honours Retry-After; the token bucket throttles."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web

from kuberay_py.client import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Client,
    ClientConfig,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    ServerError,
    TooManyRequests,
    TransportError,
    Unauthorized,
    resources,
)
from kuberay_py.client.ratelimit import TokenBucket
from kuberay_py.clock import FakeClock, settle

from .conftest import Stub, status


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [
        (400, "BadRequest", BadRequest),
        (401, "Unauthorized", Unauthorized),
        (403, "Forbidden", Forbidden),
        (404, "NotFound", NotFound),
        (409, "Conflict", Conflict),
        (409, "AlreadyExists", AlreadyExists),
        (410, "Expired", Gone),
        (410, "Gone", Gone),
        (500, "InternalError", ServerError),
        (504, "Timeout", ServerError),
        (418, "Teapot", ApiError),
    ],
)
async def test_status_codes_become_typed_errors(
    stub: Stub, client: Client, code: int, reason: str, cls: type[ApiError]
) -> None:
    stub.reply(code, status(code, reason, f"msg for {reason}"))
    with pytest.raises(cls) as info:
        await client.get(resources.PODS, "a", "ns")
    assert type(info.value) is cls
    assert info.value.status == code
    assert info.value.reason == reason
    assert info.value.message == f"msg for {reason}"
    assert info.value.body is not None and info.value.body["code"] == code


async def test_already_exists_is_not_a_conflict(stub: Stub, client: Client) -> None:
    stub.reply(409, status(409, "AlreadyExists", 'pods "a" already exists'))
    with pytest.raises(ApiError) as info:
        await client.create(resources.PODS, {"metadata": {"name": "a", "namespace": "ns"}})
    assert isinstance(info.value, AlreadyExists) and not isinstance(info.value, Conflict)


async def test_invalid_carries_field_causes(stub: Stub, client: Client) -> None:
    causes = [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.containers"},
        {"reason": "FieldValueInvalid", "message": "bad", "field": "metadata.name"},
    ]
    stub.reply(422, status(422, "Invalid", 'Pod "a" is invalid', name="a", kind="Pod", causes=causes))
    with pytest.raises(Invalid) as info:
        await client.create(resources.PODS, {"metadata": {"name": "a", "namespace": "ns"}})
    assert [c["field"] for c in info.value.causes] == ["spec.containers", "metadata.name"]
    assert info.value.details["kind"] == "Pod"


async def test_non_json_error_body_keeps_a_snippet(stub: Stub, client: Client) -> None:
    async def html(request: web.Request) -> web.StreamResponse:
        return web.Response(status=502, text="<html>bad gateway from proxy</html>", content_type="text/html")

    stub.handler = html
    with pytest.raises(ServerError, match="bad gateway from proxy") as info:
        await client.get(resources.PODS, "a", "ns")
    assert info.value.status == 502


async def test_non_json_success_body_is_a_transport_error(stub: Stub, client: Client) -> None:
    async def html(request: web.Request) -> web.StreamResponse:
        return web.Response(
            status=200, text="<html>login page of some proxy</html>", content_type="text/html"
        )

    stub.handler = html
    with pytest.raises(TransportError, match="login page") as info:
        await client.get(resources.PODS, "a", "ns")
    assert info.value.reason == "UndecodableResponse"


async def test_429_waits_retry_after_then_succeeds(stub: Stub) -> None:
    clock = FakeClock()
    stub.reply(429, status(429, "TooManyRequests", "slow down"), headers={"Retry-After": "3"})
    stub.reply(429, status(429, "TooManyRequests", "slow down"), headers={"Retry-After": "2"})
    stub.reply(200, {"kind": "Pod", "metadata": {"name": "a"}})
    async with Client(ClientConfig(host=stub.url), clock=clock) as c:
        task = asyncio.create_task(c.get(resources.PODS, "a", "ns"))
        await _until(lambda: clock.sleepers == 1)
        assert len(stub.requests) == 1
        await clock.advance(2.9)
        assert len(stub.requests) == 1  # Retry-After not over yet
        await clock.advance(0.1)
        await _until(lambda: clock.sleepers == 1 and len(stub.requests) == 2)
        await clock.advance(2.0)
        got = await asyncio.wait_for(task, 5)
    assert got["metadata"]["name"] == "a"
    assert len(stub.requests) == 3


async def test_429_gives_up_after_max_retries(stub: Stub) -> None:
    clock = FakeClock()
    for _ in range(2):
        stub.reply(429, status(429, "TooManyRequests", "slow down"), headers={"Retry-After": "1"})
    async with Client(ClientConfig(host=stub.url, max_retries=1), clock=clock) as c:
        task = asyncio.create_task(c.get(resources.PODS, "a", "ns"))
        await _until(lambda: clock.sleepers == 1)
        await clock.advance(1.0)
        with pytest.raises(TooManyRequests) as info:
            await asyncio.wait_for(task, 5)
    assert info.value.retry_after == 1.0
    assert len(stub.requests) == 2


async def test_429_without_retry_after_is_not_retried(stub: Stub, client: Client) -> None:
    stub.reply(429, status(429, "TooManyRequests", "slow down", retryAfterSeconds=4))
    with pytest.raises(TooManyRequests) as info:
        await client.get(resources.PODS, "a", "ns")
    assert info.value.retry_after == 4.0
    assert len(stub.requests) == 1


async def test_token_bucket_burst_then_qps() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=10, burst=3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)  # reservations queue up in arrival order
    await clock.advance(10.0)
    assert bucket.try_accept() and bucket.try_accept() and bucket.try_accept()
    assert not bucket.try_accept()  # refill is capped at burst


async def test_client_requests_are_throttled_by_the_bucket(stub: Stub) -> None:
    clock = FakeClock()
    for _ in range(3):
        stub.reply(200, {"kind": "Pod", "metadata": {"name": "a"}})
    async with Client(ClientConfig(host=stub.url, qps=2, burst=2), clock=clock) as c:
        tasks = [asyncio.create_task(c.get(resources.PODS, "a", "ns")) for _ in range(3)]
        await _until(lambda: len(stub.requests) == 2 and clock.sleepers == 1)
        assert len(stub.requests) == 2  # the third is parked in the bucket, not on the wire
        await clock.advance(0.5)  # one token at 2 qps
        await asyncio.wait_for(asyncio.gather(*tasks), 5)
    assert len(stub.requests) == 3


async def test_cancelled_waiter_returns_its_token() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=1, burst=1, clock=clock)
    assert await bucket.acquire() == 0.0
    waiter = asyncio.create_task(bucket.acquire())
    await settle()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    await clock.advance(1.0)
    assert bucket.try_accept()


async def _until(cond: object, turns: int = 2000) -> None:
    """Spin the loop (real I/O included) until ``cond()`` holds."""
    assert callable(cond)
    for _ in range(turns):
        if cond():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("condition not reached")
