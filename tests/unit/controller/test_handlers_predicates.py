"""Events → queued requests: for_/owns/watches mapping, priorities and predicates."""

from __future__ import annotations

from typing import Any

import pytest
import structlog

from kuberay_py.client.resources import Resource
from kuberay_py.clock import FakeClock
from kuberay_py.controller import (
    AnnotationsChanged,
    Builder,
    GenerationChanged,
    LabelsChanged,
    PredicateFuncs,
    Request,
    ResourceVersionChanged,
    Result,
    and_,
    not_,
    or_,
)
from kuberay_py.workqueue import LOW_PRIORITY

RAYCLUSTERS = Resource("ray.io", "v1", "RayCluster", "rayclusters")
PODS = Resource("", "v1", "Pod", "pods")
NODES = Resource("", "v1", "Node", "nodes", namespaced=False)
CLUSTERTHINGS = Resource("example.com", "v1", "Thing", "things", namespaced=False)


class Noop:
    async def reconcile(self, request: Request) -> Result:
        return Result()


def obj(name: str, ns: str = "ns", **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": ns, **meta}}


def owner_ref(name: str, kind: str = "RayCluster", api: str = "ray.io/v1", controller: bool = True) -> dict:
    return {"apiVersion": api, "kind": kind, "name": name, "uid": f"uid-{name}", "controller": controller}


async def drain(queue: Any) -> list[tuple[Request, int]]:
    out = []
    while len(queue):
        item, prio = await queue.get_with_priority()
        queue.done(item)
        out.append((item, prio))
    return out


async def test_for_enqueues_the_object_on_add_update_delete(cache: Any) -> None:
    c = Builder("h-for", cache, clock=FakeClock()).for_(RAYCLUSTERS).complete(Noop())
    c.start_sources()
    inf = cache.informer_for(RAYCLUSTERS)
    inf.add(obj("rc"))
    assert await drain(c.queue) == [(Request("ns", "rc"), 0)]
    inf.update(obj("rc", labels={"a": "b"}))
    assert await drain(c.queue) == [(Request("ns", "rc"), 0)]
    inf.delete(obj("rc"))
    assert await drain(c.queue) == [(Request("ns", "rc"), 0)]


async def test_initial_list_and_resync_events_queue_behind_live_changes(cache: Any) -> None:
    c = Builder("h-prio", cache, clock=FakeClock()).for_(RAYCLUSTERS).complete(Noop())
    c.start_sources()
    inf = cache.informer_for(RAYCLUSTERS)
    inf.add(obj("old-1"), is_initial=True)
    inf.add(obj("old-2"), is_initial=True)
    inf.add(obj("new"))
    assert await drain(c.queue) == [
        (Request("ns", "new"), 0),
        (Request("ns", "old-1"), LOW_PRIORITY),
        (Request("ns", "old-2"), LOW_PRIORITY),
    ]
    inf.update(obj("old-1"), resync=True)
    inf.update(obj("old-2", labels={"x": "y"}))
    assert await drain(c.queue) == [(Request("ns", "old-2"), 0), (Request("ns", "old-1"), LOW_PRIORITY)]


async def test_generation_predicate_drops_status_only_updates_passes_create_delete(cache: Any) -> None:
    c = Builder("h-gen", cache).for_(RAYCLUSTERS, predicates=[GenerationChanged()]).complete(Noop())
    c.start_sources()
    inf = cache.informer_for(RAYCLUSTERS)
    inf.add(obj("rc", generation=1))
    await drain(c.queue)
    inf.update({**obj("rc", generation=1), "status": {"state": "ready"}})
    assert len(c.queue) == 0
    inf.update(obj("rc", generation=2))
    assert len(c.queue) == 1
    await drain(c.queue)
    inf.delete(obj("rc"))
    assert len(c.queue) == 1


async def test_kuberays_primary_predicate_combination(cache: Any) -> None:
    primary = or_(GenerationChanged(), LabelsChanged(), AnnotationsChanged())
    c = Builder("h-kuberay", cache).for_(RAYCLUSTERS, predicates=[primary]).complete(Noop())
    c.start_sources()
    inf = cache.informer_for(RAYCLUSTERS)
    inf.add(obj("rc", generation=1), is_initial=True)
    await drain(c.queue)
    inf.update(obj("rc", generation=1), resync=True)
    inf.update({**obj("rc", generation=1), "status": {"x": 1}})
    assert len(c.queue) == 0
    inf.update(obj("rc", generation=1, annotations={"ray.io/ft": "true"}))
    assert len(c.queue) == 1


def test_changed_predicates_compare_only_their_field() -> None:
    a = obj("x", generation=1, labels={"k": "v"}, annotations={"n": "1"}, resourceVersion="1")
    b = obj("x", generation=1, labels={"k": "v"}, annotations={"n": "2"}, resourceVersion="2")
    assert not GenerationChanged().update(a, b)
    assert not LabelsChanged().update(a, b)
    assert AnnotationsChanged().update(a, b)
    assert ResourceVersionChanged().update(a, b)
    assert not LabelsChanged().update(obj("x"), obj("x", labels={}))  # absent == empty
    for p in (GenerationChanged(), LabelsChanged(), AnnotationsChanged()):
        assert p.create(a) and p.delete(a) and p.generic(a)


def test_combinators() -> None:
    a, b = obj("x", generation=1), obj("x", generation=2, labels={"k": "v"})
    assert and_(GenerationChanged(), LabelsChanged()).update(a, b)
    assert not and_(GenerationChanged(), AnnotationsChanged()).update(a, b)
    assert or_(AnnotationsChanged(), GenerationChanged()).update(a, b)
    assert not or_(AnnotationsChanged()).update(a, b)
    assert not not_(GenerationChanged()).update(a, b)
    named_x = PredicateFuncs(lambda o: o["metadata"]["name"] == "x")
    assert named_x.create(a) and not named_x.create(obj("y"))
    with pytest.raises(TypeError, match="forget the"):
        or_(GenerationChanged)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one"):
        and_()


async def test_owns_enqueues_the_controlling_owner_of_the_for_kind(cache: Any) -> None:
    c = Builder("h-owns", cache).for_(RAYCLUSTERS).owns(PODS).complete(Noop())
    c.start_sources()
    pods = cache.informer_for(PODS)
    pods.add(obj("p1", ownerReferences=[owner_ref("rc-a")]))
    pods.add(obj("p2", ownerReferences=[owner_ref("rc-b", controller=False)]))  # not the controller
    pods.add(obj("p3", ownerReferences=[owner_ref("rs", kind="ReplicaSet", api="apps/v1")]))  # other kind
    pods.add(obj("p4", ownerReferences=[owner_ref("rc-c", api="other.io/v1")]))  # other group
    pods.add(obj("p5", ownerReferences=[owner_ref("rc-d", api="ray.io/v1alpha1")]))  # version ignored
    pods.add(obj("p6"))
    assert [r for r, _ in await drain(c.queue)] == [Request("ns", "rc-a"), Request("ns", "rc-d")]


async def test_owns_update_enqueues_old_and_new_owner(cache: Any) -> None:
    c = Builder("h-owns-upd", cache).for_(RAYCLUSTERS).owns(PODS).complete(Noop())
    c.start_sources()
    pods = cache.informer_for(PODS)
    pods.add(obj("p", ownerReferences=[owner_ref("old")]))
    await drain(c.queue)
    pods.update(obj("p", ownerReferences=[owner_ref("new")]))
    assert {r.name for r, _ in await drain(c.queue)} == {"old", "new"}


async def test_owns_can_match_every_owner(cache: Any) -> None:
    c = Builder("h-owns-all", cache).for_(RAYCLUSTERS).owns(PODS, only_controller=False).complete(Noop())
    c.start_sources()
    cache.informer_for(PODS).add(obj("p", ownerReferences=[owner_ref("a", controller=False)]))
    assert [r for r, _ in await drain(c.queue)] == [Request("ns", "a")]


async def test_cluster_scoped_owner_gets_an_empty_namespace(cache: Any) -> None:
    c = Builder("h-cluster", cache).for_(CLUSTERTHINGS).owns(PODS).complete(Noop())
    c.start_sources()
    ref = owner_ref("t", kind="Thing", api="example.com/v1")
    cache.informer_for(PODS).add(obj("p", ownerReferences=[ref]))
    assert [r for r, _ in await drain(c.queue)] == [Request("", "t")]


async def test_watches_uses_the_map_function(cache: Any) -> None:
    def every_cluster_on_node(node: dict[str, Any]) -> list[Request]:
        return [Request("ns", "rc-1"), Request("ns", "rc-2")]

    c = Builder("h-watch", cache).for_(RAYCLUSTERS).watches(NODES, every_cluster_on_node).complete(Noop())
    c.start_sources()
    cache.informer_for(NODES).add(obj("node-1", ns=""))
    assert [r.name for r, _ in await drain(c.queue)] == ["rc-1", "rc-2"]


async def test_failing_map_function_is_logged_and_does_not_break_the_informer(cache: Any) -> None:
    def broken(_: dict[str, Any]) -> list[Request]:
        raise KeyError("spec")

    c = Builder("h-broken", cache).for_(RAYCLUSTERS).watches(NODES, broken).complete(Noop())
    c.start_sources()
    with structlog.testing.capture_logs() as logs:
        cache.informer_for(NODES).add(obj("node-1", ns=""))
    assert len(c.queue) == 0
    [entry] = [e for e in logs if e["event"].startswith("event handler failed")]
    assert entry["controller"] == "h-broken" and entry["source"] == "watches Node" and entry["exc_info"]


def test_builder_rejects_bad_wiring(cache: Any) -> None:
    with pytest.raises(ValueError, match="needs for_"):
        Builder("b1", cache).owns(PODS).complete(Noop())
    with pytest.raises(ValueError, match="nothing to watch"):
        Builder("b2", cache).complete(Noop())
    with pytest.raises(ValueError, match="already called"):
        Builder("b3", cache).for_(RAYCLUSTERS).for_(PODS)
    with pytest.raises(TypeError, match="list of Predicate"):
        Builder("b4", cache).for_(RAYCLUSTERS, predicates=GenerationChanged())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-empty"):
        Builder("", cache)
    with pytest.raises(TypeError, match="async def reconcile"):
        Builder("b5", cache).for_(RAYCLUSTERS).complete(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_concurrent_reconciles"):
        Builder("b6", cache).for_(RAYCLUSTERS).with_options(max_concurrent_reconciles=0).complete(Noop())


def test_builder_hands_the_controller_to_on_complete(cache: Any) -> None:
    got = []
    c = Builder("b-cb", cache, on_complete=got.append).for_(RAYCLUSTERS).complete(Noop())
    c.start_sources()
    assert got == [c]


async def test_handlers_attach_only_when_the_controller_starts(cache: Any) -> None:
    """A standby replica (built, not running) must not fill a queue nobody drains."""
    c = Builder("h-standby", cache).for_(RAYCLUSTERS).owns(PODS).complete(Noop())
    inf = cache.informer_for(RAYCLUSTERS)
    inf.add(obj("rc-1"))
    cache.informer_for(PODS).add(obj("p", ownerReferences=[owner_ref("rc-1")]))
    assert len(c.queue) == 0
    # Starting replays what the informers hold, behind live changes.
    c.start_sources()
    inf.add(obj("rc-2"))
    assert await drain(c.queue) == [(Request("ns", "rc-2"), 0), (Request("ns", "rc-1"), LOW_PRIORITY)]
    c.start_sources()  # idempotent: no second handler
    inf.update(obj("rc-2", labels={"x": "y"}))
    assert await drain(c.queue) == [(Request("ns", "rc-2"), 0)]
