"""The kit's last-write memo: our write is read until the cache shows a version it did not replace."""

from __future__ import annotations

from dataclasses import dataclass

from controllers.common.last_write import latest, remember_write
from kuberay_py.objects import Obj


@dataclass
class Memo:
    written: tuple[frozenset[str], Obj] | None = None


def obj(rv: str, **extra: object) -> Obj:
    return {"metadata": {"name": "x", "namespace": "ns", "resourceVersion": rv}, **extra}


def test_no_write_reads_the_cache() -> None:
    cached = obj("1")
    assert latest(Memo(), cached) is cached


def test_our_write_is_read_until_the_cache_moves_on() -> None:
    memo, cached, ours = Memo(), obj("1"), obj("2", status={"state": "ready"})
    remember_write(memo, cached, ours)
    assert latest(memo, cached) is ours
    newer = obj("3")
    assert latest(memo, newer) is newer and memo.written is None
    assert latest(memo, cached) is cached  # the memo ended: a later stale read stays the cache's


def test_a_chain_of_writes_in_one_reconcile_covers_every_version_it_replaced() -> None:
    memo, cached = Memo(), obj("1")
    finalized = obj("2", finalizers=["f"])
    remember_write(memo, cached, finalized)
    status = obj("3", status={"state": "ready"})
    remember_write(memo, finalized, status)
    assert latest(memo, obj("1")) is status  # the cache has shown neither write yet
    assert latest(memo, obj("2")) is status  # the cache has shown the finalizer only
    assert latest(memo, obj("3")) is not status and memo.written is None


def test_a_write_over_someone_elses_version_starts_afresh() -> None:
    memo = Memo()
    remember_write(memo, obj("1"), obj("2"))
    remember_write(memo, obj("5"), obj("6"))  # over a version we did not write
    assert memo.written is not None and memo.written[0] == frozenset({"5"})
