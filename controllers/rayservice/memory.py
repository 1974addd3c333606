"""What the RayService controller remembers between reconciles, in one place.

All of it is an optimisation or a courtesy (no event spam), never the truth: after an operator
restart the config is submitted once more (Ray's PUT is declarative) and a Warning may repeat
once. :meth:`Memory.forget` drops everything kept for a RayService when it leaves the cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from controllers.common.memos import Memos
from controllers.ray import metrics as ray_metrics
from controllers.rayservice.serve import ServeConfigCache
from kuberay_py.objects import Obj

__all__ = ["MAX_TOKENS", "Memory", "ServiceMemo"]

MAX_TOKENS = 10000


@dataclass
class ServiceMemo:
    """One RayService's memory; a new UID under the same name starts a fresh one."""

    uid: str
    # (resourceVersion replaced, RayService written) of our last status write: read it instead
    # of the cache until the cache moves on (controllers.common.last_write).
    written: tuple[frozenset[str], Obj] | None = None
    warned: dict[str, str] = field(default_factory=dict)  # event reason -> last message sent
    rejected: dict[str, str] = field(default_factory=dict)  # cluster -> serveConfigV2 Ray answered 4xx to
    # (uid, generation, annotations) validated last, and the errors found.
    validated: tuple[Any, list[Any]] | None = None


class Memory:
    def __init__(self) -> None:
        self.serve_configs = ServeConfigCache()  # bounded LRU of submitted configs
        self._tokens: dict[str, str] = {}  # head Pod uid -> Ray auth token
        self.memos: Memos[ServiceMemo] = Memos(ServiceMemo)

    def token(self, pod_uid: str) -> str | None:
        return self._tokens.get(pod_uid)

    def remember_token(self, pod_uid: str, token: str) -> None:
        if len(self._tokens) > MAX_TOKENS:
            self._tokens.clear()  # head Pods come and go; a few Secret reads rebuild it
        self._tokens[pod_uid] = token

    def forget(self, key: str) -> None:
        """The RayService ``key`` is gone: drop its memo, submitted configs and endpoint gauges."""
        self.memos.forget(key)
        self.serve_configs.drop(key)
        namespace, name = key.split("/", 1)
        for source in ("head", "worker"):
            try:
                ray_metrics.SERVE_ENDPOINTS.remove(namespace, name, source)
            except KeyError:
                pass

    def __contains__(self, key: object) -> bool:
        return key in self.memos or (isinstance(key, str) and key in self.serve_configs)
