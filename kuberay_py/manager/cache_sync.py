"""The error of a manager whose caches did not sync in time, naming what did not.

An operator that exits 1 after two minutes of waiting tells its user nothing unless it says which
watch never listed: most often an API the cluster does not serve (a batch scheduler selected
without its CRD installed) or RBAC that forbids listing one resource in one namespace.
controller-runtime names the kind ("timed out waiting for cache to be synced for Kind ...");
this names the kind, its API group and version, and the namespaces whose list never succeeded.
"""

from __future__ import annotations

from kuberay_py.cache import Cache, Informer

__all__ = ["cache_sync_timeout", "unsynced"]


def unsynced(cache: Cache) -> list[str]:
    """One entry per informer not yet synced: ``Kind (plural.group/version) in namespace a, b``,
    with only the namespaces whose initial list has not succeeded (``in all namespaces`` for a
    cluster-wide watch)."""
    return [_describe(i) for i in cache.informers if not i.has_synced()]


def _describe(informer: Informer) -> str:
    res = informer.res
    waiting = [r.namespace for r in informer.reflectors if not r.synced]
    named = sorted(ns for ns in waiting if ns is not None)
    where = f"in namespace {', '.join(named)}" if named else "in all namespaces"
    return f"{res.kind} ({res}/{res.version}) {where}"


def cache_sync_timeout(cache: Cache, timeout: float) -> TimeoutError:
    """The error ``Manager.run`` fails with when ``cache`` did not sync within ``timeout`` seconds."""
    pending = "; ".join(unsynced(cache)) or "no informer left (they synced as the timeout fired)"
    return TimeoutError(
        f"caches did not sync within {timeout}s: timed out waiting for cache to be synced for "
        f"{pending}; check that the API server serves these resources (a CRD installed) and the "
        "operator's RBAC lets it list and watch them"
    )
