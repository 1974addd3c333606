"""The cache reads a reconciler may make: a protocol, so tests hand in a plain fake."""

from __future__ import annotations

from typing import Protocol

from kuberay_py.client import Resource
from kuberay_py.objects import Obj

__all__ = ["CacheReader"]


class CacheReader(Protocol):
    """What :class:`kuberay_py.cache.Cache` offers a reconciler (reads only, never the network)."""

    def get(self, res: Resource, name: str, namespace: str | None = None) -> Obj | None: ...

    def list(
        self, res: Resource, namespace: str | None = None, *, labels: dict[str, str] | None = None
    ) -> list[Obj]: ...
