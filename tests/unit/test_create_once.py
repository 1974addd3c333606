"""The kit's create-once and delete-once: a write with its events; AlreadyExists on a create and
NotFound on a delete are the outcome wanted, not an error."""

from __future__ import annotations

import pytest

from controllers.common.events import create_once, delete_once
from kuberay_py.client import AlreadyExists, Forbidden, NotFound
from kuberay_py.objects import Obj
from tests.unit.fakes import Events

ABOUT: Obj = {"metadata": {"name": "owner", "namespace": "ns"}}
FAILED, DONE = ("FailedToCreateX", "Failed to create x: {error}"), ("CreatedX", "Created x")


async def _answer(result: Obj | Exception) -> Obj:
    if isinstance(result, Exception):
        raise result
    return result


async def test_a_create_gets_its_normal_event() -> None:
    events = Events()
    created = await create_once(events, ABOUT, _answer({"metadata": {"name": "x"}}), failed=FAILED, done=DONE)
    assert created == {"metadata": {"name": "x"}} and events.reasons() == ["CreatedX"]


async def test_already_exists_is_none_and_no_event() -> None:
    events = Events()
    exists = AlreadyExists(409, "AlreadyExists", "x already exists")
    assert await create_once(events, ABOUT, _answer(exists), failed=FAILED, done=DONE) is None
    assert events.events == []


async def test_another_error_is_a_warning_and_raised() -> None:
    events = Events()
    with pytest.raises(Forbidden):
        await create_once(events, ABOUT, _answer(Forbidden(403, "Forbidden", "no")), failed=FAILED, done=DONE)
    assert events.reasons() == ["FailedToCreateX"] and "no" in events.events[0][2]


async def test_a_delete_gets_its_normal_event() -> None:
    events = Events()
    assert await delete_once(
        events, ABOUT, _answer({}), failed=("FailedToDeleteX", "x: {error}"), done=("DeletedX", "x")
    )
    assert events.reasons() == ["DeletedX"]


async def test_not_found_on_delete_is_false_and_no_event() -> None:
    events = Events()
    gone = NotFound(404, "NotFound", "x not found")
    assert not await delete_once(
        events, ABOUT, _answer(gone), failed=("FailedToDeleteX", "x: {error}"), done=("DeletedX", "x")
    )
    assert events.events == []


async def test_a_delete_refused_is_a_warning_and_raised() -> None:
    events = Events()
    with pytest.raises(Forbidden):
        await delete_once(
            events,
            ABOUT,
            _answer(Forbidden(403, "Forbidden", "no")),
            failed=("FailedToDeleteX", "x: {error}"),
            done=("DeletedX", "x"),
        )
    assert events.reasons() == ["FailedToDeleteX"]
    assert events.events[0][2].startswith("x: ") and "no" in events.events[0][2]


async def test_a_delete_without_warning_still_raises() -> None:
    events = Events()
    with pytest.raises(Forbidden):
        await delete_once(
            events, ABOUT, _answer(Forbidden(403, "Forbidden", "no")), failed=None, done=("DeletedX", "x")
        )
    assert events.events == []
