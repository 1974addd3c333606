"""LIST responses built from cached JSON bytes, with ``limit``/``continue`` paging.

A 10,000-Pod list is answered by joining each object's cached serialization; nothing is
re-encoded unless the client asked for a different version of a multi-version CRD.
Items of a built-in kind's list carry no ``apiVersion``/``kind`` (kube-apiserver encodes typed
lists that way; custom resources are unstructured and keep theirs). Continue tokens have
kube-apiserver's shape (base64 of ``{"v","rv","start"}``). Like etcd, later
pages show the snapshot at the first page's resourceVersion: the retained event history is rolled
back to it; a token older than that history gets ``410 Expired`` just as an etcd-compacted one
does.
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
from .store import bare_item

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


def _snapshot(bucket: Any, list_rv: int) -> dict[tuple[str, str], dict[str, Any]]:
    """The bucket's objects as of ``list_rv``: undo every retained event newer than it."""
    view: dict[tuple[str, str], dict[str, Any]] = dict(bucket.objects)
    for ev in reversed(bucket.history):
        if ev.rv <= list_rv:
            break
        meta = ev.obj["metadata"]
        key = (meta.get("namespace") or "", meta["name"])
        if ev.type == "ADDED" or ev.old is None:
            view.pop(key, None)
        else:
            view[key] = ev.old
    return view


def select(
    core: ApiCore,
    rt: ResourceType,
    namespace: str | None,
    matches: Callable[[dict[str, Any]], bool],
    *,
    selective: bool,
    limit: int | None,
    token: str | None,
) -> tuple[list[tuple[tuple[str, str], dict[str, Any]]], dict[str, Any]]:
    """One page of (key, object) and the list metadata (resourceVersion, continue, remainingItemCount)."""
    bucket = core.storage.bucket(rt.key)
    list_rv = core.storage.rv
    start: tuple[str, str] | None = None
    objects = bucket.objects
    keys = bucket.sorted_keys()
    if token:
        list_rv, start = decode_continue(token)
        if list_rv < bucket.compacted_rv:
            raise StatusError.expired(_EXPIRED_CONTINUE)
        if list_rv < core.storage.rv:
            objects = _snapshot(bucket, list_rv)
            keys = sorted(objects)
    if start is not None:
        keys = keys[bisect.bisect_right(keys, start) :]
    if namespace is not None:
        keys = [k for k in keys if k[0] == namespace]
    page: list[tuple[tuple[str, str], dict[str, Any]]] = []
    more = False
    remaining: int | None = None
    for i, key in enumerate(keys):
        obj = objects[key]
        if selective and not matches(obj):
            continue
        if limit is not None and len(page) >= limit:
            more = True
            remaining = None if selective else len(keys) - i
            break
        page.append((key, obj))
    meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
    if more and page:
        meta["continue"] = encode_continue(list_rv, page[-1][0])
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
    current = bucket.objects
    typed = not rt.is_custom  # built-in kinds: items without apiVersion/kind, as kube-apiserver
    parts: list[bytes] = []
    for key, obj in page:
        if obj.get("apiVersion") != av:
            shown = core.present(rt, obj)
            parts.append(orjson.dumps(bare_item(shown) if typed else shown))
        elif current.get(key) is obj:
            parts.append(bucket.encoded_item(key) if typed else bucket.encoded(key))
        else:  # an older state from the snapshot
            parts.append(orjson.dumps(bare_item(obj) if typed else obj))
    head = orjson.dumps({"kind": rt.list_kind, "apiVersion": av, "metadata": meta})
    return head[:-1] + b',"items":[' + b",".join(parts) + b"]}"
