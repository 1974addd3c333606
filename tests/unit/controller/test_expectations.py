"""ControllerExpectations: writes issued but not yet observed hold a key unsatisfied."""

from __future__ import annotations

from typing import Any

import pytest
import structlog

from kuberay_py.clock import FakeClock
from kuberay_py.controller import Expectations
from kuberay_py.controller.expectations import controller_owner_key

KEY = "ns/rc"


def pod(name: str, uid: str, owner: str = "rc", **meta: Any) -> dict[str, Any]:
    refs = [{"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": owner, "uid": "o", "controller": True}]
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid, "ownerReferences": refs, **meta}}


def test_unknown_key_is_satisfied() -> None:
    assert Expectations(clock=FakeClock()).satisfied(KEY)


def test_created_by_uid_is_satisfied_once_the_informer_sees_it() -> None:
    e = Expectations(clock=FakeClock())
    e.expect_created(KEY, pod("head", "u1"))
    e.expect_created(KEY, "u2")
    assert not e.satisfied(KEY)
    assert e.pending(KEY) == {"creates": 2, "deletes": 0}
    e.on_add(pod("head", "u1"), False)
    assert not e.satisfied(KEY)
    e.on_add(pod("worker", "u2"), False)
    assert e.satisfied(KEY)


def test_watch_event_arriving_before_the_create_response_still_counts() -> None:
    e = Expectations(clock=FakeClock())
    p = pod("head", "u1")
    e.on_add(p, False)  # the informer was faster than our create call's response
    e.expect_created(KEY, p)
    assert e.satisfied(KEY)


def test_unrelated_adds_do_not_satisfy() -> None:
    e = Expectations(clock=FakeClock())
    e.expect_created(KEY, "u1")
    e.on_add(pod("other", "u9"), False)
    e.on_add(pod("x", "u8", owner="another-cluster"), False)
    assert not e.satisfied(KEY)


def test_names_and_generate_name_counts() -> None:
    e = Expectations(clock=FakeClock())
    e.expect_creations(KEY, ["rc-head"], generate_name="rc-worker-", count=2)
    assert e.pending(KEY)["creates"] == 3
    e.on_add(pod("rc-head", "u1"), False)
    e.on_add(pod("rc-worker-abcde", "u2", generateName="rc-worker-"), False)
    assert not e.satisfied(KEY)
    e.on_add(pod("rc-worker-fghij", "u3", generateName="rc-worker-"), False)
    assert e.satisfied(KEY)


def test_failed_create_withdraws_its_expectation() -> None:
    e = Expectations(clock=FakeClock())
    e.expect_creations(KEY, ["rc-head"], generate_name="rc-worker-", count=1)
    e.creation_failed(KEY, name="rc-head")
    e.creation_failed(KEY, generate_name="rc-worker-")
    assert e.satisfied(KEY)


def test_deletion_observed_on_delete_event() -> None:
    e = Expectations(clock=FakeClock())
    p = pod("w", "u1")
    e.expect_deleted(KEY, p)
    e.on_update(p, p)  # an unrelated update
    assert not e.satisfied(KEY)
    e.on_delete(p)
    assert e.satisfied(KEY)


def test_graceful_deletion_is_observed_when_deletion_timestamp_appears() -> None:
    e = Expectations(clock=FakeClock())
    p = pod("w", "u1")
    e.expect_deleted(KEY, "u1")
    e.on_update(p, pod("w", "u1", deletionTimestamp="2026-01-01T00:00:00Z"))
    assert e.satisfied(KEY)


def test_delete_event_before_expect_deleted_still_counts() -> None:
    e = Expectations(clock=FakeClock())
    e.on_delete(pod("w", "u1"))
    e.expect_deleted(KEY, "u1")
    assert e.satisfied(KEY)


async def test_expectations_expire_after_five_minutes() -> None:
    clock = FakeClock()
    e = Expectations(clock=clock)
    e.expect_created(KEY, "lost-event")
    await clock.advance(300)
    assert not e.satisfied(KEY)
    await clock.advance(0.001)
    with structlog.testing.capture_logs() as logs:
        assert e.satisfied(KEY)
    assert logs[0]["event"].startswith("expectations expired") and logs[0]["creates"] == 1
    assert e.pending(KEY) == {"creates": 0, "deletes": 0}


async def test_new_expectation_refreshes_the_ttl() -> None:
    clock = FakeClock()
    e = Expectations(clock=clock)
    e.expect_created(KEY, "u1")
    await clock.advance(200)
    e.expect_created(KEY, "u2")
    await clock.advance(200)
    assert not e.satisfied(KEY)


def test_delete_forgets_a_key() -> None:
    e = Expectations(clock=FakeClock())
    e.expect_created(KEY, "u1")
    e.delete(KEY)
    assert e.satisfied(KEY)
    e.on_add(pod("p", "u1"), False)  # a late event for the forgotten key is harmless
    assert e.satisfied(KEY)


def test_bad_input_is_rejected_clearly() -> None:
    e = Expectations(clock=FakeClock())
    with pytest.raises(ValueError, match="uid"):
        e.expect_created(KEY, {"metadata": {"name": "no-uid"}})
    with pytest.raises(ValueError, match="generate_name"):
        e.expect_creations(KEY, count=2)
    assert e.satisfied(KEY)


def test_controller_owner_key() -> None:
    assert controller_owner_key(pod("p", "u")) == "ns/rc"
    assert controller_owner_key({"metadata": {"name": "p"}}) is None
