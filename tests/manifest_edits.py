"""Edits of a manifest by dotted path, for tables of "this change must be rejected at that field".

Shared by the semantic-validation unit tests and the CRD tests on an API server, so the same
path syntax (``spec.workerGroupSpecs[0].replicas``) reaches the same field in both.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

__all__ = ["Mutation", "all_of", "delete_path", "duplicate_first_group", "set_path"]

Mutation = Callable[[dict[str, Any]], None]


def _parts(path: str) -> list[str | int]:
    return [int(p[1:-1]) if p.startswith("[") else p for p in path.replace("[", ".[").split(".") if p]


def set_path(path: str, value: Any) -> Mutation:
    """Set a dotted path (``[n]`` for list items), creating maps on the way."""

    def apply(obj: dict[str, Any]) -> None:
        *head, last = _parts(path)
        cur: Any = obj
        for part in head:
            cur = cur[part] if isinstance(part, int) else cur.setdefault(part, {})
        cur[last] = value

    return apply


def delete_path(path: str) -> Mutation:
    """Remove the field at a dotted path (it must exist)."""

    def apply(obj: dict[str, Any]) -> None:
        *head, last = _parts(path)
        cur: Any = obj
        for part in head:
            cur = cur[part]
        del cur[last]

    return apply


def all_of(*mutations: Mutation) -> Mutation:
    def apply(obj: dict[str, Any]) -> None:
        for m in mutations:
            m(obj)

    return apply


def duplicate_first_group(obj: dict[str, Any]) -> None:
    """A second worker group identical to the first (so with the same groupName)."""
    groups = obj["spec"]["workerGroupSpecs"]
    groups.append(copy.deepcopy(groups[0]))
