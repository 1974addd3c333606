"""A toy reconciler driven by ``owns()`` against the envtest API server.

The owner is a ConfigMap, the owned object a Secret it creates with a controller ownerReference.
The reconciler copies the Secret's ``v`` label into the ConfigMap's data, so each reconcile that
saw a change leaves its mark in the API server, where the test reads it (never in test memory).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable
from typing import Any

from kuberay_py.cache import Cache
from kuberay_py.client import AlreadyExists, Client, NotFound
from kuberay_py.client.resources import CONFIGMAPS, SECRETS
from kuberay_py.controller import Builder, Controller, Request, Result
from kuberay_py.metrics import registry
from tests import polling

WAIT = 20.0  # generous bound for eventual consistency on a loaded machine, not a performance assertion


# Any error fails at once: these checks read objects that already exist.
eventually = functools.partial(polling.eventually, timeout=WAIT, tolerate=())


class ChildMirror:
    """Ensures owner ConfigMap ``X`` has a Secret ``X-child`` and mirrors the child's ``v`` label."""

    def __init__(self, client: Client, cache: Cache) -> None:
        self.client = client
        self.cache = cache
        self.requests: list[Request] = []

    async def reconcile(self, request: Request) -> Result:
        self.requests.append(request)
        owner = self.cache.get(CONFIGMAPS, request.name, request.namespace)
        if owner is None:
            return Result()
        child_name = f"{request.name}-child"
        child = self.cache.get(SECRETS, child_name, request.namespace)
        if child is None:
            ref = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
            body = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": child_name, "labels": {"v": "1"}, "ownerReferences": [ref]},
            }
            with contextlib.suppress(AlreadyExists):  # the cache may not have caught up yet
                await self.client.create(SECRETS, body, request.namespace)
            return Result()
        seen = (child["metadata"].get("labels") or {}).get("v", "")
        ping = (owner["metadata"].get("annotations") or {}).get("ping", "")
        data = owner.get("data") or {}
        if data.get("childV") != seen or data.get("pong", "") != ping:
            patch = {"data": {"childV": seen, "pong": ping}}
            await self.client.patch(CONFIGMAPS, request.name, patch, request.namespace)
        return Result()


@contextlib.asynccontextmanager
async def running(k8s: Client, namespace: str, name: str) -> AsyncIterator[tuple[Controller, ChildMirror]]:
    cache = Cache(k8s, namespaces=[namespace])
    reconciler = ChildMirror(k8s, cache)
    controller = Builder(name, cache).for_(CONFIGMAPS).owns(SECRETS).complete(reconciler)
    cache_task = asyncio.create_task(cache.run())
    run_task = asyncio.create_task(controller.run())
    try:
        yield controller, reconciler
    finally:
        controller.stop()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(run_task, WAIT)
        cache_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await cache_task


async def child_v(k8s: Client, namespace: str, owner: str) -> str | None:
    cm = await k8s.get(CONFIGMAPS, owner, namespace)
    return (cm.get("data") or {}).get("childV")


async def test_owned_object_change_reconciles_its_owner(k8s: Client, namespace: str) -> None:
    async with running(k8s, namespace, "toy-owns") as (_, reconciler):
        await k8s.create(CONFIGMAPS, {"metadata": {"name": "owner"}, "data": {}}, namespace)

        async def mirrored(v: str) -> bool:
            return await child_v(k8s, namespace, "owner") == v

        # create → reconcile creates the child → the child's add event reconciles the owner again
        await eventually(lambda: mirrored("1"), "the owner to mirror the new child")

        # An update of the owned Secret (not of the owner) must reconcile the owner.
        before = len(reconciler.requests)
        await k8s.patch(SECRETS, "owner-child", {"metadata": {"labels": {"v": "2"}}}, namespace)
        await eventually(lambda: mirrored("2"), "the owner to see the child's update")
        assert len(reconciler.requests) > before
        assert set(reconciler.requests) == {Request(namespace, "owner")}

        # Deleting the owned Secret reconciles the owner, which recreates it.
        await k8s.delete(SECRETS, "owner-child", namespace)

        async def recreated() -> bool:
            try:
                child = await k8s.get(SECRETS, "owner-child", namespace)
            except NotFound:
                return False
            return child["metadata"]["labels"]["v"] == "1"

        await eventually(recreated, "the owner to recreate its deleted child")
        await eventually(lambda: mirrored("1"), "the owner to mirror the recreated child")

        assert (
            registry.get_sample_value(
                "controller_runtime_reconcile_total", {"controller": "toy-owns", "result": "success"}
            )
            or 0
        ) >= 4
        assert (
            registry.get_sample_value("controller_runtime_reconcile_errors_total", {"controller": "toy-owns"})
            == 0
        )


async def test_objects_without_a_matching_controller_reference_do_not_reconcile(
    k8s: Client, namespace: str
) -> None:
    """Non-controller owner references and ownerless objects are ignored by owns().

    One worker serves the queue in FIFO order and an informer dispatches events in watch order, so
    once a later event's reconcile is visible, an earlier wrongly-enqueued key would already have
    been reconciled. The barriers below use that to make "no reconcile happened" observable.
    """
    async with running(k8s, namespace, "toy-owns-filter") as (_, reconciler):
        lonely = await k8s.create(CONFIGMAPS, {"metadata": {"name": "lonely"}, "data": {}}, namespace)
        await k8s.create(CONFIGMAPS, {"metadata": {"name": "other"}, "data": {}}, namespace)
        for owner in ("lonely", "other"):
            await eventually(lambda o=owner: _eq(child_v(k8s, namespace, o), "1"), f"{owner} to settle")

        async def pong(value: str) -> bool:
            cm = await k8s.get(CONFIGMAPS, "other", namespace)
            return (cm.get("data") or {}).get("pong") == value

        # ConfigMap barrier: every ConfigMap event before this one has been reconciled.
        await k8s.patch(CONFIGMAPS, "other", {"metadata": {"annotations": {"ping": "a"}}}, namespace)
        await eventually(lambda: pong("a"), "the ConfigMap barrier")
        lonely_runs = reconciler.requests.count(Request(namespace, "lonely"))

        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "lonely", "uid": lonely["metadata"]["uid"]}
        await k8s.create(SECRETS, {"metadata": {"name": "bystander", "ownerReferences": [ref]}}, namespace)
        await k8s.create(SECRETS, {"metadata": {"name": "plain"}}, namespace)
        wrong_kind = {**ref, "kind": "Secret", "controller": True}
        body = {"metadata": {"name": "wrong-kind", "ownerReferences": [wrong_kind]}}
        await k8s.create(SECRETS, body, namespace)

        # Secret barrier: a controlled child's update after the three creates above.
        await k8s.patch(SECRETS, "other-child", {"metadata": {"labels": {"v": "x"}}}, namespace)
        await eventually(lambda: _eq(child_v(k8s, namespace, "other"), "x"), "the Secret barrier")
        assert reconciler.requests.count(Request(namespace, "lonely")) == lonely_runs


async def _eq(value: Awaitable[Any], expected: Any) -> bool:
    return await value == expected
