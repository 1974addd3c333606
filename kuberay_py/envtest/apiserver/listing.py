"""LIST responses built from cached JSON bytes, with ``limit``/``continue`` paging.

A 10,000-Pod list is answered by joining each object's cached serialization; nothing is
re-encoded unless the client asked for a different version of a multi-version CRD.
Continue tokens have kube-apiserver's shape (base64 of ``{"v","rv","start"}``); unlike etcd the
later pages show current objects rather than a snapshot, and a token older than the retained
history gets ``410 Expired`` just as an etcd-compacted one does.
"""

from __future__ import annotations

import base64
import bisect
from collections.abc import Callable
from typing import Any

import orjson

from .core import ApiCore
from .errors import StatusError
from .registry import ResourceType

__all__ = ["list_bytes", "select"]

_EXPIRED_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list."
)


def encode_continue(rv: int, key: tuple[str, str]) -> str:
    start = f"{key[0]}/{key[1]}\x00" if key[0] else f"{key[1]}\x00"
    raw = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = orjson.loads(raw)
        if data.get("v") != "meta.k8s.io/v1":
            raise ValueError(
                "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
            )
        rv = int(data["rv"])
        start = str(data["start"]).rstrip("\x00")
    except (ValueError, KeyError, TypeError, orjson.JSONDecodeError) as e:
        raise StatusError.bad_request(f"continue key is not valid: {e}") from None
    ns, _, name = start.rpartition("/")
    return rv, (ns, name)


def select(
    core: ApiCore,
    rt: ResourceType,
    namespace: str | None,
    matches: Callable[[dict[str, Any]], bool],
    *,
    selective: bool,
    limit: int | None,
    token: str | None,
) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    """The keys of one page and the list metadata (resourceVersion, continue, remainingItemCount)."""
    bucket = core.storage.bucket(rt.key)
    list_rv = core.storage.rv
    start: tuple[str, str] | None = None
    if token:
        list_rv, start = decode_continue(token)
        if list_rv < bucket.compacted_rv:
            raise StatusError.expired(_EXPIRED_CONTINUE)
    keys = bucket.sorted_keys()
    if start is not None:
        keys = keys[bisect.bisect_right(keys, start) :]
    if namespace is not None:
        keys = [k for k in keys if k[0] == namespace]
    page: list[tuple[str, str]] = []
    more = False
    remaining: int | None = None
    objects = bucket.objects
    for i, key in enumerate(keys):
        if selective and not matches(objects[key]):
            continue
        if limit is not None and len(page) >= limit:
            more = True
            remaining = None if selective else len(keys) - i
            break
        page.append(key)
    meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
    if more and page:
        meta["continue"] = encode_continue(list_rv, page[-1])
        if remaining is not None:
            meta["remainingItemCount"] = remaining
    return page, meta


def list_bytes(
    core: ApiCore,
    rt: ResourceType,
    namespace: str | None,
    matches: Callable[[dict[str, Any]], bool],
    *,
    selective: bool,
    limit: int | None,
    token: str | None,
) -> bytes:
    page, meta = select(core, rt, namespace, matches, selective=selective, limit=limit, token=token)
    bucket = core.storage.bucket(rt.key)
    av = rt.api_version
    objects = bucket.objects
    parts: list[bytes] = []
    for key in page:
        obj = objects[key]
        if obj.get("apiVersion") == av:
            parts.append(bucket.encoded(key))
        else:
            parts.append(orjson.dumps({**obj, "apiVersion": av}))
    head = orjson.dumps({"kind": rt.list_kind, "apiVersion": av, "metadata": meta})
    return head[:-1] + b',"items":[' + b",".join(parts) + b"]}"
