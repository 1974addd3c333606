"""Mirrors of KubeRay v1.7.0 ``e2erayservice/rayservice_validation_test.go``:
TestRayServiceValidation and TestRayServiceManagedBy, with KubeRay's sample RayService (its
``fruit_app`` and ``math_app``), run by the RayService scenario harness (tests/scenario)."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.constants import RAYCLUSTERS, RAYSERVICES
from kuberay_py.client import ApiError

from ..conftest import Scenario, condition, eventually, sample, wait_ready


def sample_service(name: str, **spec: Any) -> dict[str, Any]:
    svc = sample("ray-service.sample.yaml")
    svc["metadata"] = {"name": name}
    svc["spec"].update(spec)
    return svc


async def test_ray_service_validation__ray_service_name_too_long_with_48_characters(
    scenario: Scenario,
) -> None:
    """rayservice_validation_test.go:TestRayServiceValidation/"RayService name too long with 48
    characters"."""
    sc = scenario
    name = "a" * 48
    await sc.client.create(RAYSERVICES, sample_service(name), sc.namespace)

    async def rejected() -> bool:
        ready = condition(await sc.get(name), "Ready")
        return ready.get("status") == "False" and ready.get("reason") == "ValidationFailed"

    await eventually(rejected, "Ready=False, ValidationFailed")


async def test_ray_service_managed_by(scenario: Scenario) -> None:
    """rayservice_validation_test.go:TestRayServiceManagedBy, its three subtests ("Successful
    creation ... managed by Kuberay Operator", "Creation of RayService skipped, managed by Kueue",
    "Failed creation ..., managed by external non supported controller"). The Kueue one is
    created first; once the KubeRay one (queued after it) is Ready, the first must still be
    untouched (Go: ``Consistently`` for 3 s)."""
    sc = scenario
    await sc.client.create(
        RAYSERVICES, sample_service("rayservice-skip", managedBy="kueue.x-k8s.io/multikueue"), sc.namespace
    )
    await sc.client.create(
        RAYSERVICES, sample_service("rayservice-ok", managedBy="ray.io/kuberay-operator"), sc.namespace
    )
    await wait_ready(sc, "rayservice-ok", timeout=60)
    skipped = await sc.get("rayservice-skip")
    status = skipped.get("status") or {}
    assert condition(skipped, "Ready") == {}
    assert status.get("serviceStatus", "") == ""
    assert (status.get("activeServiceStatus") or {}).get("rayClusterName", "") == ""
    assert (status.get("pendingServiceStatus") or {}).get("rayClusterName", "") == ""
    with pytest.raises(ApiError) as immutable:
        await sc.client.patch(
            RAYSERVICES, "rayservice-skip", {"spec": {"managedBy": "ray.io/kuberay-operator"}}, sc.namespace
        )
    assert immutable.value.status == 422
    assert (await sc.get("rayservice-skip"))["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    clusters = (await sc.client.list(RAYCLUSTERS, sc.namespace))["items"]
    assert not [c for c in clusters if c["metadata"]["name"].startswith("rayservice-skip")]
    await sc.client.delete(RAYSERVICES, "rayservice-skip", sc.namespace)
    with pytest.raises(ApiError) as invalid:
        await sc.client.create(
            RAYSERVICES,
            sample_service("rayservice-fail", managedBy="controller.com/not-supported"),
            sc.namespace,
        )
    assert invalid.value.status == 422
