"""The built-in Kubernetes API server (aiohttp, in-process) used when no real binaries exist."""

from .errors import StatusError
from .server import BuiltinAPIServer

__all__ = ["BuiltinAPIServer", "StatusError"]
