"""Async Kubernetes API access in raw JSON: configuration, verbs, watch, throttling, typed errors.

Example::

    cfg = await load_config()
    async with Client(cfg) as client:
        pod = await client.get(resources.PODS, "web-0", "default")
        await client.patch(resources.PODS, "web-0", {"metadata": {"labels": {"a": "b"}}}, "default")
"""

from kuberay_py.client import resources
from kuberay_py.client.client import PATCH_CONTENT_TYPES, Client, PatchType, encode_query
from kuberay_py.client.config import ClientConfig, ConfigError, load_config, load_config_retrying
from kuberay_py.client.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    MethodNotAllowed,
    NotFound,
    ServerError,
    TooManyRequests,
    TransportError,
    Unauthorized,
    error_from_status,
)
from kuberay_py.client.resources import Resource

__all__ = [
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
