"""Informers and the cache: list+watch mirrors of API resources, with indexes and cached reads.

Example::

    cache = Cache(client, selectors={resources.PODS: "ray.io/node-type"})
    cache.informer_for(resources.PODS).add_event_handler(handler)
    async with anyio.create_task_group() as tg:
        tg.start_soon(cache.run)
        await cache.wait_for_cache_sync()
        heads = cache.list(resources.PODS, "ns", labels={"ray.io/node-type": "head"})
"""

from kuberay_py.cache.backoff import Backoff
from kuberay_py.cache.cache import Cache, CacheNotSynced
from kuberay_py.cache.informer import EventHandler, FuncHandler, Informer
from kuberay_py.cache.reflector import Reflector, ReflectorSink
from kuberay_py.cache.store import (
    INDEX_NAMESPACE,
    INDEX_OWNER,
    Store,
    controller_owner_uid,
    label_index,
    object_key,
)
from kuberay_py.cache.transform import Transform, strip_managed_fields

__all__ = [
    "INDEX_NAMESPACE",
    "INDEX_OWNER",
    "Backoff",
    "Cache",
    "CacheNotSynced",
    "EventHandler",
    "FuncHandler",
    "Informer",
    "Reflector",
    "ReflectorSink",
    "Store",
    "Transform",
    "controller_owner_uid",
    "label_index",
    "object_key",
    "strip_managed_fields",
]
