"""The cache-sync timeout's error names each watch that never listed, and where it did not.

(That a watch which synced is left out is asserted end to end in
``tests/integration/batchscheduler/test_scheduler_api_missing.py``.)
"""

from __future__ import annotations

from kuberay_py.cache import Cache
from kuberay_py.client import Client, ClientConfig
from kuberay_py.client.resources import CLUSTERROLES, PODS
from kuberay_py.manager.cache_sync import cache_sync_timeout, unsynced

CONFIG = ClientConfig(host="http://127.0.0.1:9")  # never contacted: nothing here is run


async def test_names_kind_api_and_the_namespaces_still_listing() -> None:
    client = Client(CONFIG)
    try:
        cache = Cache(client, namespaces=["a", "b"])
        pods = cache.informer_for(PODS)
        cache.informer_for(CLUSTERROLES)
        pods.reflectors[0].synced = True  # namespace "a" listed; "b" never did
        assert unsynced(cache) == [
            "Pod (pods/v1) in namespace b",
            "ClusterRole (clusterroles.rbac.authorization.k8s.io/v1) in all namespaces",
        ]
        error = cache_sync_timeout(cache, 120.0)
        assert str(error).startswith(
            "caches did not sync within 120.0s: timed out waiting for cache to be synced for "
            "Pod (pods/v1) in namespace b; ClusterRole"
        )
    finally:
        await client.close()
