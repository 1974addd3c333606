"""Operator-wide Pod defaults from KubeRay's ``Configuration`` file (``--config``).

An admin sets them once for every Ray Pod (``defaultContainerEnvs``, ``defaultPodAnnotations``,
``defaultPodLabels``, ``headSidecarContainers``, ``workerSidecarContainers``), and a RayCluster's
own template must still win, so the precedence is KubeRay v1.7.0's:

* sidecars are appended after the template's containers (and the autoscaler's), before the Ray
  container's command, volumes and env are filled in;
* a default annotation or label is added only when the Pod does not already carry that key,
  whether the key came from the user's template or from the operator's own labels;
* a default env var goes to the Ray container (index 0) only when that container has no variable
  of that name, and before the variables the operator adds (``RAY_CLUSTER_NAME`` ...).

Pure functions over the Pod dict, so the builders stay pure and tests need no operator.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from controllers import constants as C

__all__ = ["PodDefaults", "apply_container_env_defaults", "apply_template_defaults"]


@dataclass(frozen=True)
class PodDefaults:
    """What the Configuration adds to every Ray Pod; empty by default (no ``--config``)."""

    container_envs: tuple[dict[str, Any], ...] = ()
    annotations: tuple[tuple[str, str], ...] = ()
    labels: tuple[tuple[str, str], ...] = ()
    head_sidecars: tuple[dict[str, Any], ...] = ()
    worker_sidecars: tuple[dict[str, Any], ...] = ()

    def __bool__(self) -> bool:
        return bool(
            self.container_envs
            or self.annotations
            or self.labels
            or self.head_sidecars
            or self.worker_sidecars
        )


def apply_template_defaults(pod: dict[str, Any], node_type: str, defaults: PodDefaults) -> None:
    """Sidecars, then annotations and labels the Pod lacks (KubeRay's buildHeadPod/buildWorkerPod)."""
    sidecars = defaults.head_sidecars if node_type == C.NODE_TYPE_HEAD else defaults.worker_sidecars
    if sidecars:
        pod["spec"].setdefault("containers", []).extend(copy.deepcopy(list(sidecars)))
    meta = pod["metadata"]
    for key, pairs in (("annotations", defaults.annotations), ("labels", defaults.labels)):
        if not pairs:
            continue
        target = meta.setdefault(key, {})
        for name, value in pairs:
            target.setdefault(name, value)


def apply_container_env_defaults(container: dict[str, Any], defaults: PodDefaults) -> None:
    """Default env vars the Ray container does not set itself (KubeRay's setContainerEnvVars)."""
    if not defaults.container_envs:
        return
    env = container.setdefault("env", [])
    for default in defaults.container_envs:
        if not any(e.get("name") == default.get("name") for e in env):
            env.append(copy.deepcopy(default))
