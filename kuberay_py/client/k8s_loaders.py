"""kubernetes_asyncio's kubeconfig and in-cluster loaders, without its generated API and models.

We use kubernetes_asyncio for one thing at run time: reading a kubeconfig (contexts, exec and
OIDC credentials, certificate files) or the in-cluster service account into a ``Configuration``.
Its package ``__init__`` files import every generated API class and model first (~860 modules,
~40 MiB of RSS, a third of the operator's memory at 1,000 Pods) although the loaders need only
``Configuration``. So before the loaders are imported, :func:`install` registers the two package
modules (``kubernetes_asyncio`` and ``kubernetes_asyncio.client``) *unexecuted*: submodules import
as usual from the real files, ``kubernetes_asyncio.client.Configuration`` resolves to its own
module, and any other attribute (``CoreV1Api``, ``V1Pod``, ``ApiClient`` …) runs the real package
``__init__`` on first use, so code that wants the whole client (tests, CRD generation) still gets
it. Nothing is patched inside kubernetes_asyncio; if it was already imported, nothing changes.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType
from typing import Any

__all__ = ["install"]

_CHEAP = {"Configuration": "kubernetes_asyncio.client.configuration"}


def _shell(name: str) -> ModuleType | None:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    state = {"loaded": False}

    def load_fully() -> None:
        if not state["loaded"]:
            state["loaded"] = True
            del module.__dict__["__getattr__"]
            assert spec.loader is not None
            spec.loader.exec_module(module)  # the real __init__, into this same module object

    def lazy_attribute(attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        if name == "kubernetes_asyncio.client":
            home = _CHEAP.get(attr)
            if home is not None:
                return getattr(importlib.import_module(home), attr)
            if attr == "ApiClient" and not state["loaded"]:
                return _api_client_on_demand(load_fully, module)
        load_fully()
        return getattr(module, attr)

    module.__dict__["__getattr__"] = lazy_attribute
    return module


def _api_client_on_demand(load_fully: Any, module: ModuleType) -> type:
    """What ``kube_config`` imports as ``ApiClient`` (for helpers we never call): the real class,
    loaded with the rest of the client only if one is ever made."""

    class ApiClient:
        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            load_fully()
            return module.ApiClient(*args, **kwargs)

    return ApiClient


def install() -> None:
    """Register the unexecuted package modules, unless kubernetes_asyncio is already imported."""
    if "kubernetes_asyncio" in sys.modules:
        return
    top = _shell("kubernetes_asyncio")
    if top is None:
        return
    sys.modules["kubernetes_asyncio"] = top
    client = _shell("kubernetes_asyncio.client")
    if client is None:
        del sys.modules["kubernetes_asyncio"]
        return
    sys.modules["kubernetes_asyncio.client"] = client
    top.__dict__["client"] = client
