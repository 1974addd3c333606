"""Reusing one started etcd + kube-apiserver across the Environments of a test session.

Starting a real control plane costs seconds of CPU (certificates, etcd, kube-apiserver's
post-start hooks, then compiling the CRDs' OpenAPI schemas), and a test session starts dozens of
Environments, most of them one after another. controller-runtime suites share one control plane per
suite; our suites start an Environment per module or per test because each runs its own operator
and simulator against a cluster nobody else touched. A :class:`ControlPlanePool` keeps both: when an
Environment stops, its control plane is not stopped but *reset* to the state it had when it first
became ready, and the next Environment with the same flags gets it.

The reset works on etcd, below kube-apiserver, because a real cluster cannot be emptied through its
API in envtest: namespaces never finish terminating without kube-controller-manager, and finalizers
hold objects. At ready time the pool records every key under ``/registry/`` with its value and
etcd's revision. A reset deletes each key created since (namespaces, CRDs and their objects, RBAC,
webhook configurations, IPAddresses), and puts back the recorded value of each recorded key that
was changed or deleted since, except the leases kube-apiserver renews by itself. kube-apiserver
sees all of it through its own etcd watches, as it sees any write; the reset then waits until the
API shows the recorded namespaces and API groups again (CRDs' groups leave discovery when their
handlers go), so the next Environment starts on what a fresh control plane would show it.

A control plane is only reused by Environments with the same assets and flags, on the same event
loop (its processes belong to it). When anything in a reset fails, that control plane is stopped
instead, and the next Environment starts a new one.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson
import structlog

from .controlplane import Assets, ControlPlane

__all__ = [
    "ControlPlanePool",
    "EtcdSnapshot",
    "acquire_control_plane",
    "current_pool",
    "release_control_plane",
    "use_pool",
]

log = structlog.get_logger("kuberay_py.envtest.reuse")

_PREFIX = b"/registry/"
_PREFIX_END = b"/registry0"  # the first key after every key that starts with the prefix
# Kept as kube-apiserver left them: it renews these itself, and an old renewTime put back would
# only make it fight the value.
_NOT_RESTORED = (b"/registry/leases/", b"/registry/masterleases/", b"/registry/events/")
# CRDs outlive a reset (their objects do not): compiling a CRD's schema is most of what installing
# one costs, and the next Environment usually installs the same ones. ``prune_crds`` removes those
# it does not want; kube-apiserver's own controller adds and removes their APIServices.
_CRD_PREFIX = b"/registry/apiextensions.k8s.io/customresourcedefinitions/"
_KEPT = (_CRD_PREFIX, b"/registry/apiregistration.k8s.io/apiservices/")
_TXN_OPS = 100  # etcd's --max-txn-ops defaults to 128
_SETTLE_TIMEOUT = 60.0


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(text: str) -> bytes:
    return base64.b64decode(text)


@dataclass
class EtcdSnapshot:
    """What the control plane held when it became ready: etcd's keys and values, its revision, and
    the namespaces and API groups kube-apiserver served then."""

    revision: int
    values: dict[bytes, str]  # key -> base64 value, as etcd's JSON gateway gives it
    namespaces: frozenset[str]
    groups: frozenset[str]


async def _etcd(session: aiohttp.ClientSession, base: str, op: str, body: dict[str, Any]) -> dict[str, Any]:
    """One call to etcd's v3 JSON gateway (``/v3/kv/range``, ``/v3/kv/txn``)."""
    async with session.post(f"{base}/v3/kv/{op}", data=orjson.dumps(body)) as r:
        data = await r.read()
        if r.status != 200:
            raise RuntimeError(f"etcd {op}: HTTP {r.status}: {data[:300]!r}")
        doc: dict[str, Any] = orjson.loads(data)
        return doc


async def _range(session: aiohttp.ClientSession, base: str, *, keys_only: bool) -> dict[str, Any]:
    return await _etcd(
        session,
        base,
        "range",
        {"key": _b64(_PREFIX), "range_end": _b64(_PREFIX_END), "keys_only": keys_only},
    )


_ApiState = tuple[frozenset[str], frozenset[str]]


async def _api_state(session: aiohttp.ClientSession, cp: ControlPlane) -> _ApiState:
    """The namespaces (a consistent list) and the API groups kube-apiserver serves now."""
    ctx = cp.client_ssl()
    async with session.get(f"{cp.url}/api/v1/namespaces", ssl=ctx) as r:
        r.raise_for_status()
        namespaces = frozenset(i["metadata"]["name"] for i in orjson.loads(await r.read())["items"])
    async with session.get(f"{cp.url}/apis", ssl=ctx) as r:
        r.raise_for_status()
        groups = frozenset(g["name"] for g in orjson.loads(await r.read())["groups"])
    return namespaces, groups


async def take_snapshot(cp: ControlPlane) -> EtcdSnapshot:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        doc = await _range(session, cp.etcd_url, keys_only=False)
        namespaces, groups = await _api_state(session, cp)
    values = {_unb64(kv["key"]): kv.get("value", "") for kv in doc.get("kvs") or []}
    return EtcdSnapshot(int(doc["header"]["revision"]), values, namespaces, groups)


def reset_ops(snapshot: EtcdSnapshot, now: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The etcd operations that bring the keyspace back to ``snapshot``: delete what was created
    since, put back what was changed or deleted since (leases and events excepted), leave CRDs."""
    ops: list[dict[str, Any]] = []
    present: set[bytes] = set()
    for kv in now:
        key = _unb64(kv["key"])
        present.add(key)
        if key.startswith(_KEPT):
            continue
        if key not in snapshot.values:
            ops.append({"request_delete_range": {"key": kv["key"]}})
        elif int(kv.get("mod_revision", 0)) > snapshot.revision and not key.startswith(_NOT_RESTORED):
            ops.append({"request_put": {"key": kv["key"], "value": snapshot.values[key]}})
    for key, value in snapshot.values.items():
        if key not in present and not key.startswith(_NOT_RESTORED):
            ops.append({"request_put": {"key": _b64(key), "value": value}})
    return ops


async def _txn(session: aiohttp.ClientSession, base: str, ops: Sequence[dict[str, Any]]) -> None:
    for i in range(0, len(ops), _TXN_OPS):
        await _etcd(session, base, "txn", {"success": ops[i : i + _TXN_OPS]})


async def _settle(
    session: aiohttp.ClientSession,
    cp: ControlPlane,
    want: _ApiState,
    what: str,
    *,
    groups: bool = True,
) -> None:
    """Until kube-apiserver serves exactly the namespaces (and, with ``groups``, the API groups)
    of ``want``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _SETTLE_TIMEOUT
    while True:
        state = await _api_state(session, cp)
        if state[0] == want[0] and (not groups or state[1] == want[1]):
            return
        if loop.time() > deadline:
            raise TimeoutError(
                f"after {what}, kube-apiserver serves namespaces {sorted(state[0] ^ want[0])} "
                f"and groups {sorted(state[1] ^ want[1])} it should not (or not yet)"
            )
        await asyncio.sleep(0.1)


def _crd_group(name: str) -> str:
    return name.split(".", 1)[1]


async def reset(cp: ControlPlane, snapshot: EtcdSnapshot) -> int:
    """Bring ``cp`` back to ``snapshot`` but for its CRDs; returns how many keys changed. Raises
    when kube-apiserver does not show the recorded namespaces within the settle timeout."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        doc = await _range(session, cp.etcd_url, keys_only=True)
        ops = reset_ops(snapshot, doc.get("kvs") or [])
        await _txn(session, cp.etcd_url, ops)
        # The kept CRDs' groups stay in discovery; prune_crds settles those.
        await _settle(session, cp, (snapshot.namespaces, snapshot.groups), "a reset", groups=False)
        return len(ops)


async def prune_crds(cp: ControlPlane, snapshot: EtcdSnapshot, wanted: Collection[str]) -> None:
    """Remove the CRDs a reset kept that the next Environment does not install (and any that is
    being deleted), so it sees the groups a fresh control plane would serve."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        async with session.get(
            f"{cp.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions", ssl=cp.client_ssl()
        ) as r:
            r.raise_for_status()
            items = orjson.loads(await r.read())["items"]
        keep = {
            i["metadata"]["name"]
            for i in items
            if i["metadata"]["name"] in wanted and not i["metadata"].get("deletionTimestamp")
        }
        drop = [i["metadata"]["name"] for i in items if i["metadata"]["name"] not in keep]
        if not drop:
            return
        await _txn(
            session,
            cp.etcd_url,
            [{"request_delete_range": {"key": _b64(_CRD_PREFIX + n.encode())}} for n in drop],
        )
        groups = snapshot.groups | {_crd_group(n) for n in keep}
        await _settle(session, cp, (snapshot.namespaces, groups), f"removing CRDs {drop}")


_Key = tuple[Assets, str, tuple[str, ...], tuple[str, ...], int]


@dataclass
class ControlPlanePool:
    """Started control planes of one process, each handed to one Environment at a time."""

    _idle: dict[_Key, list[ControlPlane]] = field(default_factory=dict)
    _snapshots: dict[int, tuple[_Key, EtcdSnapshot]] = field(default_factory=dict)
    started: int = 0
    reused: int = 0

    @staticmethod
    def _key(assets: Assets, host: str, apiserver_extra: Sequence[str], etcd_extra: Sequence[str]) -> _Key:
        return (assets, host, tuple(apiserver_extra), tuple(etcd_extra), id(asyncio.get_running_loop()))

    async def acquire(
        self,
        assets: Assets,
        apiserver_extra: Sequence[str] = (),
        etcd_extra: Sequence[str] = (),
        crds: Collection[str] = (),
    ) -> ControlPlane:
        """A control plane that serves no namespace or API group a fresh one would not, and of the
        CRDs an earlier user left only those named in ``crds`` (the caller installs them next)."""
        key = self._key(assets, "127.0.0.1", apiserver_extra, etcd_extra)
        idle = self._idle.get(key)
        while idle:
            cp = idle.pop()
            try:
                await prune_crds(cp, self._snapshots[id(cp)][1], crds)
            except (aiohttp.ClientError, OSError, RuntimeError, TimeoutError, KeyError, ValueError) as e:
                log.warning("envtest.reset_failed", error=str(e))
                del self._snapshots[id(cp)]
                await cp.stop()
                continue
            self.reused += 1
            return cp
        cp = ControlPlane(assets, apiserver_extra=apiserver_extra, etcd_extra=etcd_extra)
        await cp.start()
        self.started += 1
        try:
            self._snapshots[id(cp)] = (key, await take_snapshot(cp))
        except (aiohttp.ClientError, OSError, RuntimeError, KeyError, ValueError) as e:
            # An etcd without the v3 JSON gateway (a stand-in): used once, then stopped.
            log.info("envtest.reuse_unavailable", error=str(e))
        return cp

    async def release(self, cp: ControlPlane) -> None:
        entry = self._snapshots.get(id(cp))
        if entry is None:
            await cp.stop()
            return
        key, snapshot = entry
        started = time.monotonic()
        try:
            changed = await asyncio.shield(reset(cp, snapshot))
        except (aiohttp.ClientError, OSError, RuntimeError, TimeoutError, KeyError, ValueError) as e:
            log.warning("envtest.reset_failed", error=str(e))
            del self._snapshots[id(cp)]
            await cp.stop()
            return
        log.info("envtest.reset", keys=changed, seconds=round(time.monotonic() - started, 2))
        self._idle.setdefault(key, []).append(cp)

    async def close(self) -> None:
        """Stop every idle control plane (each in-use one is stopped by its release)."""
        idle = [cp for planes in self._idle.values() for cp in planes]
        self._idle.clear()
        for cp in idle:
            self._snapshots.pop(id(cp), None)
            await cp.stop()


_pool: ControlPlanePool | None = None


def use_pool(pool: ControlPlanePool | None) -> None:
    """Make Environments of this process share control planes through ``pool`` (``None``: each
    Environment starts and stops its own, the default outside the test plug-in)."""
    global _pool
    _pool = pool


def current_pool() -> ControlPlanePool | None:
    """The pool :func:`use_pool` set (so a test can swap in its own and put this one back)."""
    return _pool


async def acquire_control_plane(
    assets: Assets, apiserver_extra: Sequence[str], crds: Collection[str] = ()
) -> ControlPlane:
    """A started control plane: the pool's when one is in use (``crds``: the CRDs about to be
    installed, which it may keep from an earlier user), otherwise a new one."""
    if _pool is not None:
        return await _pool.acquire(assets, apiserver_extra, crds=crds)
    cp = ControlPlane(assets, apiserver_extra=apiserver_extra)
    await cp.start()
    return cp


async def release_control_plane(cp: ControlPlane) -> None:
    if _pool is not None:
        await _pool.release(cp)
    else:
        await cp.stop()
