"""The kit's per-object memory and reconcile scope: memos keyed by name and UID, the load step
every reconciler starts with, and the dependencies a reconciler hands each context."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import cast

import pytest

from controllers import constants as C
from controllers.common.last_write import load, remember_write
from controllers.common.memos import Memos
from controllers.common.objects import controller_ref, new_child
from controllers.common.scope import Deps, Ref
from kuberay_py.client import Client
from kuberay_py.client.resources import SERVICES
from kuberay_py.clock import FakeClock
from kuberay_py.controller import Request
from kuberay_py.objects import Obj
from tests.unit.fakes import Events, FakeCache, RecordingClient


@dataclass
class Memo:
    uid: str
    written: tuple[frozenset[str], Obj] | None = None
    notes: list[str] = field(default_factory=list)


class Memory:
    def __init__(self) -> None:
        self.memos: Memos[Memo] = Memos(Memo)
        self.forgotten: list[str] = []

    def forget(self, key: str) -> None:
        self.forgotten.append(key)
        self.memos.forget(key)


def job(uid: str, rv: str = "1") -> Obj:
    return {"metadata": {"name": "j", "namespace": "ns", "uid": uid, "resourceVersion": rv}}


def test_a_memo_lives_as_long_as_its_object_under_the_same_uid() -> None:
    memos: Memos[Memo] = Memos(Memo)
    first = memos.get("ns/j", "u1")
    first.notes.append("seen")
    assert memos.get("ns/j", "u1") is first and "ns/j" in memos and len(memos) == 1
    recreated = memos.get("ns/j", "u2")  # deleted and created again under the same name
    assert recreated is not first and recreated.notes == [] and len(memos) == 1
    assert memos.peek("ns/other") is None and "ns/other" not in memos
    memos.forget("ns/j")
    assert memos.peek("ns/j") is None and list(memos) == []


def test_load_reads_our_write_while_the_cache_lags_and_forgets_a_gone_object() -> None:
    cache, memory, request = FakeCache(), Memory(), Request("ns", "j")
    cached = cache.put(C.RAYJOBS, job("u1", rv="1"))
    loaded = load(cache.get(C.RAYJOBS, "j", "ns"), request, memory)
    assert loaded is not None and loaded[0] is cached
    ours = job("u1", rv="2") | {"status": {"jobStatus": "RUNNING"}}
    remember_write(loaded[1], cached, ours)
    assert load(cache.get(C.RAYJOBS, "j", "ns"), request, memory) == (ours, loaded[1])
    cache.remove(C.RAYJOBS, "ns", "j")
    assert load(cache.get(C.RAYJOBS, "j", "ns"), request, memory) is None
    assert memory.forgotten == ["ns/j"] and len(memory.memos) == 0


def test_load_leaves_an_object_another_controller_manages_alone() -> None:
    cache, memory, request = FakeCache(), Memory(), Request("ns", "j")
    cache.put(C.RAYJOBS, job("u1") | {"spec": {"managedBy": "kueue.x-k8s.io/multikueue"}})
    assert load(cache.get(C.RAYJOBS, "j", "ns"), request, memory) is None and memory.forgotten == []
    cache.put(C.RAYJOBS, job("u1") | {"spec": {"managedBy": C.MANAGED_BY_KUBERAY}})
    assert load(cache.get(C.RAYJOBS, "j", "ns"), request, memory) is not None


def test_deps_are_frozen_and_ref_names_the_object() -> None:
    deps = Deps(cast(Client, RecordingClient()), FakeCache(), Events(), FakeClock(), options=None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        deps.clock = FakeClock()  # type: ignore[misc]
    ref = Ref.of(job("u1"))
    assert (ref.namespace, ref.name, ref.key) == ("ns", "j", "ns/j")


def test_a_child_lives_in_its_owners_namespace_under_its_control() -> None:
    owner = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "j", "namespace": "ns", "uid": "u"},
    }
    child = new_child(SERVICES, "j-head-svc", owner, labels={"a": "b"}, owner_kind="RayJob", spec={"x": 1})
    assert child == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "j-head-svc",
            "namespace": "ns",
            "labels": {"a": "b"},
            "ownerReferences": [controller_ref(owner, "RayJob")],
        },
        "spec": {"x": 1},
    }
    free = new_child(SERVICES, "s", owner, labels={}, annotations={"k": "v"}, owned=False)
    assert free["metadata"] == {"name": "s", "namespace": "ns", "labels": {}, "annotations": {"k": "v"}}
