"""Mirror of KubeRay v1.7.0 ``TestRayServiceInitializingTimeoutTerminalFailure``
(``ray-operator/test/e2erayservice/rayservice_initializing_timeout_test.go``) on envtest + the
simulator.

The steps and assertions of the Go test: a RayService applied with a short
``ray.io/initializing-timeout`` and a head image that cannot be pulled (modelled here by a Pod
runtime that refuses that image, so the head never starts) enters ``Ready=False /
InitializingTimeout`` with both cluster names cleared and ``observedGeneration`` one above the
applied generation (the finalizer write re-encodes the spec as KubeRay's Go types do); a later
apply of a valid spec with a long timeout bumps the generation but the failure stays terminal.

Differences from the Go test, each for our test rules: the timeout is 2 s instead of 10 s (the
behaviour does not depend on it); the Go test's ``Consistently`` over 15 s becomes reconciles
driven by hand after the update (each one must keep the terminal state), so nothing waits on a
fixed time. Beyond the Go test it checks that the terminal state writes no status (KubeRay's
``observedGeneration`` stays at the generation that timed out) and creates no cluster.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest

from controllers import constants as c
from controllers.constants import RAYCLUSTERS, RAYSERVICES
from controllers.raysim import RayPodRuntime, Timings
from kuberay_py.client import Client
from kuberay_py.controller import Request
from kuberay_py.envtest import Environment
from tests.polling import condition, eventually
from tests.rayservice_harness import CRD_DIR, Operator, sample, start_operator, stop_operator

NAME = "rayservice-timeout-test"
INVALID_IMAGE = "invalid-image-does-not-exist:v1.0.0"
FIELD_MANAGER = "e2e-test"  # TestApplyOptions: FieldManager "e2e-test", Force true
TIMEOUT_MESSAGE = "RayService failed to become ready within the configured timeout"


class UnpullableImageRuntime(RayPodRuntime):
    """Fake Ray, except that a Pod with :data:`INVALID_IMAGE` never starts (ImagePullBackOff)."""

    async def start(self, pod: dict[str, Any], ip: str) -> None:
        images = [ctr.get("image") for ctr in (pod.get("spec") or {}).get("containers") or []]
        if INVALID_IMAGE in images:
            raise RuntimeError(f'Back-off pulling image "{INVALID_IMAGE}"')
        await super().start(pod, ip)


@pytest.fixture
async def setup() -> AsyncIterator[tuple[Client, str, Operator]]:
    runtime = UnpullableImageRuntime(timings=Timings(build_s=0.3, replica_start_s=0.3))
    async with Environment([str(CRD_DIR)], simulate=True, pod_runtime=runtime, probe_period_scale=0.1) as env:
        client = env.new_client()
        op = start_operator(env.client_config)
        ns = await env.create_namespace()
        try:
            yield client, ns, op
        finally:
            await stop_operator(op)
            await client.close()
            await runtime.close()


def sample_spec() -> dict[str, Any]:
    """``RayServiceSampleYamlApplyConfiguration()``: the spec of KubeRay's ray-service.sample.yaml."""
    spec: dict[str, Any] = sample("ray-service.sample.yaml")["spec"]
    return spec


def head_pod_template(image: str) -> dict[str, Any]:
    """``HeadPodTemplateApplyConfiguration()`` with its image overridden, as the Go test does."""
    head = copy.deepcopy(sample_spec()["rayClusterConfig"]["headGroupSpec"]["template"])
    head["spec"]["containers"][0]["image"] = image
    return head


def apply_configuration(timeout: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayService",
        "metadata": {
            "name": NAME,
            "annotations": {c.RAYSERVICE_INITIALIZING_TIMEOUT_ANNOTATION_KEY: timeout},
        },
        "spec": spec,
    }


async def apply(client: Client, ns: str, body: dict[str, Any]) -> dict[str, Any]:
    applied: dict[str, Any] = await client.patch(
        RAYSERVICES, NAME, body, ns, patch_type="apply", field_manager=FIELD_MANAGER, force=True
    )
    return applied


def assert_terminal(svc: dict[str, Any]) -> None:
    ready = condition(svc, "Ready")
    assert (ready.get("status"), ready.get("reason")) == ("False", "InitializingTimeout"), ready
    status = svc.get("status") or {}
    assert not (status.get("activeServiceStatus") or {}).get("rayClusterName")
    assert not (status.get("pendingServiceStatus") or {}).get("rayClusterName")


async def cluster_names(client: Client, ns: str) -> set[str]:
    return {item["metadata"]["name"] for item in (await client.list(RAYCLUSTERS, ns))["items"]}


async def test_rayservice_initializing_timeout_terminal_failure(setup: tuple[Client, str, Operator]) -> None:
    client, ns, op = setup
    spec = sample_spec()
    spec["rayClusterConfig"] = {
        "rayVersion": spec["rayClusterConfig"]["rayVersion"],
        "headGroupSpec": {
            "rayStartParams": {"dashboard-host": "0.0.0.0"},
            "template": head_pod_template(INVALID_IMAGE),
        },
    }
    created = await apply(client, ns, apply_configuration("2s", spec))
    initial_generation = created["metadata"]["generation"]

    # Step 1: the timeout fires and the RayService enters the terminal failure state.
    async def timed_out() -> dict[str, Any] | None:
        svc: dict[str, Any] = await client.get(RAYSERVICES, NAME, ns)
        ready = condition(svc, "Ready")
        if ready.get("reason") != "InitializingTimeout":
            return None
        return svc

    svc = await eventually(timed_out, "Ready=False/InitializingTimeout", 30)
    ready = condition(svc, "Ready")
    assert ready["status"] == "False"
    assert TIMEOUT_MESSAGE in ready["message"]

    # Step 2: cluster names cleared; observedGeneration is the applied generation + 1 (the
    # finalizer write).
    svc = await client.get(RAYSERVICES, NAME, ns)
    assert_terminal(svc)
    assert svc["status"]["observedGeneration"] == initial_generation + 1, (
        "ObservedGeneration should be the initial generation + 1 after adding finalizer"
    )
    assert svc["metadata"]["generation"] == initial_generation + 1
    assert c.RAYSERVICE_FINALIZER in svc["metadata"]["finalizers"]

    # Step 3: a valid spec and a long timeout: the generation moves on.
    clusters_before = await cluster_names(client, ns)
    updated = await apply(client, ns, apply_configuration("10m", sample_spec()))
    assert updated["metadata"]["generation"] > initial_generation, (
        "Generation should increment after spec update"
    )

    # Step 4: the failure is terminal. Each reconcile of the new generation keeps it.
    for _ in range(3):
        await op.rayservice.reconciler.reconcile(Request(ns, NAME))
        svc = await client.get(RAYSERVICES, NAME, ns)
        assert_terminal(svc)
        # KubeRay writes no status in the terminal state.
        assert svc["status"]["observedGeneration"] == initial_generation + 1

    # No new cluster for the valid spec (the timed-out one is only cleaned up).
    assert await cluster_names(client, ns) <= clusters_before
