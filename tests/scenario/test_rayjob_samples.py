"""KubeRay's RayJob samples run on the simulator, all at once, each to a terminal state.

Applied as written (with their ConfigMaps and RBAC objects), in one namespace, so this is also a
small concurrency test (the light-weight submitter sample's ``/submitter`` binary is played by
raysim's submitter). Skipped, with the reason: the SidecarMode sample (see NOT_OFFLINE;
SidecarMode itself is a scenario test), the two multi-host TPU samples (16 and 256 hosts: too
many Pods for a unit of CI).
``ray-job.interactive-mode`` waits for a user's job id, so its stable state is ``Waiting``; the
deletion-rules sample ends by deleting itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio
import yaml

from controllers.constants import RAYCLUSTERS, RAYJOBS
from controllers.raysim import RayPodRuntime
from kuberay_py.client import AlreadyExists, resources
from kuberay_py.envtest import Environment
from tests.polling import eventually
from tests.rayjob_harness import SAMPLES, JobOperator, job_environment, job_table

NOT_OFFLINE = {
    # Its instant entrypoint ends the sidecar before the head's first readiness probe passes, so
    # the head never turns Ready (a terminated container is unready; KubeRay has the same trap).
    "ray-job.sidecar-mode.yaml": "the sidecar ends before the head is ever Ready",
    "ray-job.tpu-v6e-16-multihost.yaml": "16 TPU hosts",
    "ray-job.tpu-v6e-256-multihost.yaml": "64 TPU hosts",
}
# Not Complete: interactive waits for a user's job id; deletion-rules' last rule is DeleteSelf.
STABLE = {"ray-job.interactive-mode.yaml": "Waiting", "ray-job.deletion-rules.yaml": "deleted"}
KINDS = {
    "ConfigMap": resources.CONFIGMAPS,
    "ServiceAccount": resources.SERVICEACCOUNTS,
    "Role": resources.ROLES,
    "RoleBinding": resources.ROLEBINDINGS,
}


@pytest_asyncio.fixture(loop_scope="session")
async def shared() -> AsyncIterator[tuple[Environment, RayPodRuntime, JobOperator]]:
    async with job_environment() as item:
        yield item


async def test_every_offline_sample_reaches_a_terminal_state(
    shared: tuple[Environment, RayPodRuntime, JobOperator],
) -> None:
    env, runtime, _ = shared
    client = env.new_client()
    ns = await env.create_namespace()
    want: dict[str, str] = {}
    try:
        # The sample that selects an existing cluster names one no sample defines
        # (docs/reference/rayjob.md §11).
        cluster = yaml.safe_load((SAMPLES / "ray-cluster.sample.yaml").read_text())
        cluster["metadata"] = {"name": "ray-cluster-kuberay"}
        await client.create(RAYCLUSTERS, cluster, ns)
        for path in sorted(SAMPLES.glob("ray-job.*.yaml")):
            if path.name in NOT_OFFLINE:
                continue
            for doc in yaml.safe_load_all(path.read_text()):
                if not isinstance(doc, dict):
                    continue
                kind = doc.get("kind")
                if kind == "RayJob":
                    if doc["metadata"].get("name"):  # several samples share "rayjob-sample"
                        doc["metadata"]["name"] = path.stem.removeprefix("ray-job.")
                    created = await client.create(RAYJOBS, doc, ns)
                    want[created["metadata"]["name"]] = STABLE.get(path.name, "Complete")
                elif kind in KINDS:
                    with contextlib.suppress(AlreadyExists):  # the samples share their ConfigMap
                        await client.create(KINDS[kind], doc, ns)
        assert len(want) == 16

        async def settled() -> dict[str, Any] | None:
            items = (await client.list(RAYJOBS, ns))["items"]
            states = {
                j["metadata"]["name"]: (j.get("status") or {}).get("jobDeploymentStatus") for j in items
            }
            return None if any(states.get(n, "deleted") != s for n, s in want.items()) else states

        try:
            await eventually(settled, "every sample settled", 120)
        except AssertionError:
            items = (await client.list(RAYJOBS, ns))["items"]
            got = {j["metadata"]["name"]: (j.get("status") or {}).get("jobDeploymentStatus") for j in items}
            raise AssertionError(f"want {want}\ngot {got}") from None
        for job in (await client.list(RAYJOBS, ns))["items"]:
            if want[job["metadata"]["name"]] == "Complete":
                assert job["status"]["jobStatus"] == "SUCCEEDED", job["metadata"]["name"]
        # The light-weight submitter's Pod ran the /submitter binary: one submission, its logs.
        light = await client.get(RAYJOBS, "light-weight-submitter", ns)
        assert job_table(runtime, ns, light["status"]["rayClusterName"]).submissions == 1
    finally:
        await env.delete_namespace(ns)
        await client.close()
