"""Expectations: the writes a controller has issued but not yet seen come back through its cache.

Why: a reconcile reads the informer cache, which lags the API server. If a reconcile creates a Pod
and the next reconcile of the same cluster runs before the watch delivers that Pod, the cache
still shows one Pod short and the controller creates it again (KubeRay issues #715 and #3286).
client-go's ``ControllerExpectations`` solves this: before trusting the cache for counts, the
reconciler asks :meth:`Expectations.satisfied`; until every expected create and delete has been
observed by the informer handlers (or the record is older than the 5-minute TTL, so a lost event
can never wedge a controller), it should not scale.

Expectations are recorded per controller key (``"namespace/name"`` of the owner):

* after a create returns, :meth:`~Expectations.expect_created` with the returned object — tracked
  by UID, the most precise form;
* before creates whose result is not at hand, :meth:`~Expectations.expect_creations` with exact
  names and/or a ``generateName`` prefix and a count; lower it with
  :meth:`~Expectations.creation_failed` when a create fails, or the TTL is all that releases it;
* after a delete is accepted, :meth:`~Expectations.expect_deleted` with the object or its UID.

Observation comes from registering the instance itself as an event handler on the informers of the
owned kinds (``cache.informer_for(PODS).add_event_handler(expectations)``). Handlers run in the
informer's task and the reconcile awaits between its create and :meth:`expect_created`, so the
watch event can arrive first; such early sightings are remembered briefly and settle the
expectation as soon as it is recorded. A graceful delete is observed when ``deletionTimestamp``
appears (as client-go's ReplicaSet controller does), not only when the object finally goes.

Example::

    if not expectations.satisfied(key):
        return Result(requeue_after=2)          # the cache is behind our own writes
    pod = await client.create(PODS, body, namespace)
    expectations.expect_created(key, pod)
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kuberay_py.clock import Clock, RealClock
from kuberay_py.log import get_logger

__all__ = ["EXPECTATIONS_TTL", "Expectations", "controller_owner_key"]

EXPECTATIONS_TTL = 300.0
"""client-go's ``ExpectationsTimeout`` (5 minutes)."""

_EARLY_SIGHTINGS_CAP = 10_000

Obj = Mapping[str, Any]


def controller_owner_key(obj: Obj) -> str | None:
    """``"namespace/name"`` of the object's controlling owner (``controller: true``), if any."""
    meta = obj.get("metadata") or {}
    for ref in meta.get("ownerReferences") or ():
        if ref.get("controller") and ref.get("name"):
            ns = meta.get("namespace") or ""
            return f"{ns}/{ref['name']}" if ns else str(ref["name"])
    return None


def _meta(obj: Obj) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _uid_of(obj_or_uid: Obj | str) -> str:
    uid = obj_or_uid if isinstance(obj_or_uid, str) else _meta(obj_or_uid).get("uid")
    if not uid or not isinstance(uid, str):
        raise ValueError(f"no metadata.uid to track: {str(obj_or_uid)[:200]}")
    return uid


@dataclass
class _Record:
    timestamp: float
    add_uids: set[str] = field(default_factory=set)
    add_names: set[str] = field(default_factory=set)
    add_prefixes: dict[str, int] = field(default_factory=dict)
    del_uids: set[str] = field(default_factory=set)

    def fulfilled(self) -> bool:
        return not (self.add_uids or self.add_names or self.add_prefixes or self.del_uids)


class Expectations:
    """Per-key pending creates/deletes; also an informer event handler that observes them."""

    def __init__(
        self,
        *,
        ttl: float = EXPECTATIONS_TTL,
        clock: Clock | None = None,
        key_for: Callable[[Obj], str | None] = controller_owner_key,
    ) -> None:
        if ttl <= 0:
            raise ValueError(f"ttl must be positive, got {ttl}")
        self.ttl = ttl
        self._clock = clock or RealClock()
        self._key_for = key_for
        self._records: dict[str, _Record] = {}
        self._add_uid_key: dict[str, str] = {}
        self._del_uid_key: dict[str, str] = {}
        self._seen_added: OrderedDict[str, float] = OrderedDict()
        self._seen_deleted: OrderedDict[str, float] = OrderedDict()

    # ------------------------------------------------------------------ recording
    def _record(self, key: str) -> _Record:
        now = self._clock.now()
        rec = self._records.get(key)
        if rec is None or now - rec.timestamp > self.ttl:
            if rec is not None:
                self._drop(key)
            rec = self._records[key] = _Record(now)
        rec.timestamp = now
        return rec

    def expect_created(self, key: str, obj_or_uid: Obj | str) -> None:
        """Expect an add event for the object a create call returned (tracked by UID)."""
        uid = _uid_of(obj_or_uid)
        if self._seen_added.pop(uid, None) is not None:
            return  # the watch was faster than the create response
        self._record(key).add_uids.add(uid)
        self._add_uid_key[uid] = key

    def expect_creations(
        self, key: str, names: Iterable[str] = (), *, generate_name: str | None = None, count: int = 0
    ) -> None:
        """Expect adds of objects named ``names`` and/or ``count`` objects with this ``generateName``."""
        names = [names] if isinstance(names, str) else list(names)
        if count < 0 or (count and not generate_name):
            raise ValueError("count needs a generate_name and must not be negative")
        if not names and not count:
            return
        rec = self._record(key)
        rec.add_names.update(names)
        if count:
            rec.add_prefixes[generate_name or ""] = rec.add_prefixes.get(generate_name or "", 0) + count

    def creation_failed(self, key: str, *, name: str | None = None, generate_name: str | None = None) -> None:
        """Withdraw one expectation set by :meth:`expect_creations` whose create call failed."""
        rec = self._records.get(key)
        if rec is None:
            return
        if name is not None:
            rec.add_names.discard(name)
        if generate_name is not None:
            self._lower_prefix(rec, generate_name)

    def expect_deleted(self, key: str, obj_or_uid: Obj | str) -> None:
        """Expect the deletion (or graceful-deletion start) of this object, by UID."""
        uid = _uid_of(obj_or_uid)
        if self._seen_deleted.pop(uid, None) is not None:
            return
        self._record(key).del_uids.add(uid)
        self._del_uid_key[uid] = key

    # ------------------------------------------------------------------ querying
    def satisfied(self, key: str) -> bool:
        """True when nothing is pending for ``key``, or its record outlived the TTL."""
        rec = self._records.get(key)
        if rec is None:
            return True
        if rec.fulfilled():
            self._drop(key)
            return True
        if self._clock.now() - rec.timestamp > self.ttl:
            get_logger("kuberay_py.controller.expectations").warning(
                "expectations expired; trusting the cache again", key=key, **self.pending(key)
            )
            self._drop(key)
            return True
        return False

    def pending(self, key: str) -> dict[str, int]:
        """How many creates and deletes are still unobserved for ``key`` (for logs and status)."""
        rec = self._records.get(key)
        if rec is None:
            return {"creates": 0, "deletes": 0}
        creates = len(rec.add_uids) + len(rec.add_names) + sum(rec.add_prefixes.values())
        return {"creates": creates, "deletes": len(rec.del_uids)}

    def delete(self, key: str) -> None:
        """Forget ``key`` (its owner is gone)."""
        self._drop(key)

    def _drop(self, key: str) -> None:
        rec = self._records.pop(key, None)
        if rec is None:
            return
        for uid in rec.add_uids:
            self._add_uid_key.pop(uid, None)
        for uid in rec.del_uids:
            self._del_uid_key.pop(uid, None)

    # ------------------------------------------------------------------ observing (EventHandler)
    def on_add(self, obj: dict[str, Any], is_initial: bool = False) -> None:
        meta = _meta(obj)
        uid = meta.get("uid")
        key = self._add_uid_key.pop(uid, None) if uid else None
        if key is not None:
            rec = self._records.get(key)
            if rec is not None:
                rec.add_uids.discard(uid)
            return
        key = self._key_for(obj)
        rec = self._records.get(key) if key is not None else None
        if rec is not None:
            name = meta.get("name")
            if name in rec.add_names:
                rec.add_names.discard(name)
                return
            gen = meta.get("generateName")
            if gen is not None and gen in rec.add_prefixes:
                self._lower_prefix(rec, gen)
                return
        if uid and not is_initial:
            self._remember(self._seen_added, uid)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if _meta(new).get("deletionTimestamp") and not _meta(old).get("deletionTimestamp"):
            self._deletion_observed(new)

    def on_delete(self, obj: dict[str, Any]) -> None:
        self._deletion_observed(obj)

    def _deletion_observed(self, obj: Obj) -> None:
        uid = _meta(obj).get("uid")
        if not uid:
            return
        key = self._del_uid_key.pop(uid, None)
        if key is None:
            self._remember(self._seen_deleted, uid)
            return
        rec = self._records.get(key)
        if rec is not None:
            rec.del_uids.discard(uid)

    def _lower_prefix(self, rec: _Record, prefix: str) -> None:
        left = rec.add_prefixes.get(prefix, 0) - 1
        if left > 0:
            rec.add_prefixes[prefix] = left
        else:
            rec.add_prefixes.pop(prefix, None)

    def _remember(self, seen: OrderedDict[str, float], uid: str) -> None:
        now = self._clock.now()
        seen[uid] = now
        seen.move_to_end(uid)
        while seen:
            oldest_uid, at = next(iter(seen.items()))
            if now - at <= self.ttl and len(seen) <= _EARLY_SIGHTINGS_CAP:
                break
            del seen[oldest_uid]
