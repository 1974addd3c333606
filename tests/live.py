"""Editing a live object that a controller also writes: read, modify, write, again on 409.

A test that changes a RayService's spec while the operator writes its status (or a Service the
operator also updates) races the operator: a PUT carrying the resourceVersion of an earlier read
gets 409 Conflict whenever the operator wrote in between, which on a real kube-apiserver happens
often. Like client-go's ``retry.RetryOnConflict(retry.DefaultRetry, ...)``, the edit is applied
to a fresh read and written again; any other error (a 422, say) is raised at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from kuberay_py.client import Client, Conflict, Resource

__all__ = ["CONFLICT_RETRIES", "Edit", "update_live"]

CONFLICT_RETRIES = 10  # client-go's DefaultRetry has 5 steps; a loaded 2-core machine needs more

Edit = Callable[[dict[str, Any]], dict[str, Any] | None]


async def update_live(
    client: Client,
    res: Resource,
    name: str,
    namespace: str | None,
    edit: Edit,
    *,
    status: bool = False,
) -> dict[str, Any]:
    """GET the object, apply ``edit`` (in place, or return a replacement), PUT it; retry on 409.

    ``status=True`` writes through the status subresource. Returns what the server stored.
    """
    for attempt in range(CONFLICT_RETRIES):
        current = await client.get(res, name, namespace)
        edited = edit(current)
        body = current if edited is None else edited
        try:
            if status:
                return await client.update_status(res, body)
            return await client.update(res, body)
        except Conflict:
            if attempt == CONFLICT_RETRIES - 1:
                raise
            await asyncio.sleep(0.01)  # DefaultRetry's 10 ms step between attempts
    raise AssertionError("unreachable")
