"""Pin the public names of kuberay_py.client and kuberay_py.cache so they never change by accident."""

from __future__ import annotations

import kuberay_py.cache as cache
import kuberay_py.client as client


def test_client_public_names() -> None:
    assert sorted(client.__all__) == sorted(
        [
            "PATCH_CONTENT_TYPES",
            "AlreadyExists",
            "ApiError",
            "BadRequest",
            "Client",
            "ClientConfig",
            "ConfigError",
            "Conflict",
            "Forbidden",
            "Gone",
            "Invalid",
            "MethodNotAllowed",
            "NotFound",
            "PatchType",
            "Resource",
            "ServerError",
            "TooManyRequests",
            "TransportError",
            "Unauthorized",
            "encode_query",
            "error_from_status",
            "load_config",
            "load_config_retrying",
            "resources",
        ]
    )
    assert all(hasattr(client, name) for name in client.__all__)


def test_cache_public_names() -> None:
    assert sorted(cache.__all__) == sorted(
        [
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
    )
    assert all(hasattr(cache, name) for name in cache.__all__)


def test_error_hierarchy() -> None:
    for name in (
        "BadRequest",
        "Unauthorized",
        "Forbidden",
        "NotFound",
        "MethodNotAllowed",
        "Conflict",
        "AlreadyExists",
        "Gone",
        "Invalid",
        "TooManyRequests",
        "ServerError",
        "TransportError",
    ):
        assert issubclass(getattr(client, name), client.ApiError)
    assert not issubclass(client.AlreadyExists, client.Conflict)
