"""Whether the informer cache has caught up with a write a simulator controller just made.

A controller that reads its own objects from the cache would otherwise act on the version before
its write (and create a duplicate, or fail on a conflict); like upstream's ``EndpointSliceTracker``
the simulator's endpoint controllers remember their last write and prefer it while this says so.
"""

from __future__ import annotations

from typing import Any

__all__ = ["cache_lags"]


def _resource_version(obj: dict[str, Any]) -> int | None:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion", ""))
    except ValueError:
        return None


def cache_lags(mine: dict[str, Any], cached: dict[str, Any] | None) -> bool:
    """True while the cache has no copy of our write ``mine`` or an older one."""
    if cached is None:
        return True
    written, seen = _resource_version(mine), _resource_version(cached)
    return written is not None and seen is not None and seen < written
