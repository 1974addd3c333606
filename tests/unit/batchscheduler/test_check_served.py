"""The start-up check of the selected scheduler's API (KubeRay v1.7.0's Kubernetes WAS factory
discovers a served scheduling.k8s.io version before the manager exists; the others check nothing)."""

from __future__ import annotations

import pytest

from controllers.batchscheduler import SchedulerUnavailable, check_served
from kuberay_py.client import Resource


class Discovery:
    """Answers ``served`` as an API server that serves only ``groups`` would."""

    def __init__(self, *groups: str) -> None:
        self.groups = set(groups)
        self.asked: list[str] = []

    async def served(self, res: Resource) -> bool:
        self.asked.append(f"{res.group}/{res.version}")
        return f"{res.group}/{res.version}" in self.groups


async def test_kubernetes_was_needs_scheduling_v1alpha2_served() -> None:
    with pytest.raises(SchedulerUnavailable, match=r"scheduling\.k8s\.io/v1alpha2 API is not available"):
        await check_served(Discovery("scheduling.k8s.io/v1"), kubernetes_was=True)  # type: ignore[arg-type]
    await check_served(Discovery("scheduling.k8s.io/v1alpha2"), kubernetes_was=True)  # type: ignore[arg-type]


async def test_without_kubernetes_was_nothing_is_asked() -> None:
    discovery = Discovery()
    await check_served(discovery, kubernetes_was=False)  # type: ignore[arg-type]
    assert discovery.asked == []
