"""The informer's local copy of a resource: objects by key plus secondary indexes.

Reconcilers ask "which Pods does this RayCluster own?" and "which Pods carry label
``ray.io/cluster=x``?" on every pass; answering from an index keeps that O(matches) instead of
O(all Pods). Indexes are maintained on every write, like client-go's ``threadSafeStore``:

* ``namespace`` -> the object's namespace (``""`` for cluster-scoped objects);
* ``owner`` -> the UID of the *controlling* owner reference (``controller: true``), the index
  controller-runtime users build by hand for ``Owns()``;
* ``label:<key>`` -> the value of that label, added on demand with :meth:`Store.add_label_index`.

Objects are stored as the decoded dicts and handed out shared: callers must never mutate them.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable

from kuberay_py.objects import Obj

__all__ = ["INDEX_NAMESPACE", "INDEX_OWNER", "Store", "controller_owner_uid", "label_index", "object_key"]

IndexFunc = Callable[[Obj], list[str]]

INDEX_NAMESPACE = "namespace"
INDEX_OWNER = "owner"


def object_key(obj: Obj) -> str:
    """``namespace/name`` for namespaced objects, ``name`` otherwise (client-go's MetaNamespaceKey)."""
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace")
    name = metadata.get("name", "")
    return f"{namespace}/{name}" if namespace else str(name)


def controller_owner_uid(obj: Obj) -> str | None:
    """The UID of the owner reference marked ``controller: true`` (at most one may exist)."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller") is True and ref.get("uid"):
            return str(ref["uid"])
    return None


def label_index(key: str) -> str:
    """The index name for a label key."""
    return f"label:{key}"


def _index_namespace(obj: Obj) -> list[str]:
    return [str((obj.get("metadata") or {}).get("namespace") or "")]


def _index_owner(obj: Obj) -> list[str]:
    uid = controller_owner_uid(obj)
    return [uid] if uid else []


def _index_label(key: str) -> IndexFunc:
    def index(obj: Obj) -> list[str]:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        value = labels.get(key)
        return [str(value)] if value is not None else []

    return index


class Store:
    """Objects by key with incrementally maintained indexes. Not thread-safe; one event loop."""

    def __init__(self) -> None:
        self._items: dict[str, Obj] = {}
        self._indexers: dict[str, IndexFunc] = {}
        self._indices: dict[str, dict[str, set[str]]] = {}
        self.add_index(INDEX_NAMESPACE, _index_namespace)
        self.add_index(INDEX_OWNER, _index_owner)

    # -- reads -----------------------------------------------------------------------------------

    def get(self, key: str) -> Obj | None:
        return self._items.get(key)

    def list(self) -> builtins.list[Obj]:
        return list(self._items.values())

    def keys(self) -> builtins.list[str]:
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def has_index(self, index: str) -> bool:
        return index in self._indexers

    def index_keys(self, index: str, value: str) -> set[str]:
        """The keys indexed under ``value`` (a live view's copy)."""
        if index not in self._indices:
            raise KeyError(f"no index {index!r}; known: {sorted(self._indices)}")
        return set(self._indices[index].get(value, ()))

    def by_index(self, index: str, value: str) -> builtins.list[Obj]:
        """Objects whose ``index`` function yields ``value``, in key order."""
        return [self._items[k] for k in sorted(self.index_keys(index, value))]

    # -- indexes ---------------------------------------------------------------------------------

    def add_index(self, name: str, func: IndexFunc) -> None:
        """Register an index; existing objects are indexed immediately. Re-adding is a no-op."""
        if name in self._indexers:
            return
        self._indexers[name] = func
        index: dict[str, set[str]] = {}
        for key, obj in self._items.items():
            for value in func(obj):
                index.setdefault(value, set()).add(key)
        self._indices[name] = index

    def add_label_index(self, key: str) -> None:
        self.add_index(label_index(key), _index_label(key))

    # -- writes (the informer's) -----------------------------------------------------------------

    def upsert(self, obj: Obj) -> Obj | None:
        """Insert or replace by key; returns the previous object."""
        key = object_key(obj)
        old = self._items.get(key)
        if old is not None:
            self._unindex(key, old)
        self._items[key] = obj
        for name, func in self._indexers.items():
            index = self._indices[name]
            for value in func(obj):
                index.setdefault(value, set()).add(key)
        return old

    def remove(self, key: str) -> Obj | None:
        """Delete by key; returns the removed object."""
        old = self._items.pop(key, None)
        if old is not None:
            self._unindex(key, old)
        return old

    def _unindex(self, key: str, obj: Obj) -> None:
        for name, func in self._indexers.items():
            index = self._indices[name]
            for value in func(obj):
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]

    def scope_keys(self, namespace: str | None) -> Iterable[str]:
        """Keys a reflector for ``namespace`` owns (all keys when ``None``)."""
        if namespace is None:
            return list(self._items)
        return self.index_keys(INDEX_NAMESPACE, namespace)
