"""Every RayCluster sample from KubeRay, applied with the cluster simulator on, reaches ``ready``.

The simulator's kubelet runs the injected probes for real against fake Ray nodes (raylet and GCS
health endpoints), so ``ready`` here means our generated probes, ports and commands work.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from controllers import constants as C
from controllers.api.gates import ClusterGates
from controllers.raycluster.options import RayClusterOptions
from controllers.raycluster.setup import setup
from controllers.raysim import RayPodRuntime, Timings
from kuberay_py.client import Client, NotFound, Resource
from kuberay_py.client.resources import CONFIGMAPS, SECRETS, SERVICES
from kuberay_py.envtest import Environment
from tests.in_loop_manager import in_loop_manager, running_in_loop
from tests.integration.raycluster.conftest import CRDS
from tests.polling import eventually

SAMPLES = Path(__file__).resolve().parents[2] / "fixtures" / "kuberay" / "samples"
# The mTLS sample needs cert-manager, which the simulator does not run: tests/integration/
# raycluster/test_mtls.py covers it (with and without cert-manager's CRDs).
SAMPLE_FILES = sorted(p.name for p in SAMPLES.glob("ray-cluster.*.yaml") if p.name != "ray-cluster.mtls.yaml")
KINDS: dict[str, Resource] = {
    "ConfigMap": CONFIGMAPS,
    "Secret": SECRETS,
    "Service": SERVICES,
    "RayCluster": C.RAYCLUSTERS,
}


@pytest_asyncio.fixture(loop_scope="session")  # one simulated cluster per sample: no shared addresses
async def sim_operator() -> AsyncIterator[tuple[Environment, Client]]:
    runtime = RayPodRuntime(timings=Timings(build_s=0.3, replica_start_s=0.3, drain_s=3.0))
    async with Environment([CRDS], simulate=True, pod_runtime=runtime, probe_period_scale=0.1) as env:
        manager = in_loop_manager(env.client_config)
        # KubeRay's alpha gates on: some samples use their fields (NetworkPolicy, history server,
        # embedded GCS); with the gates off those samples are invalid specs, as in KubeRay.
        options = dataclasses.replace(RayClusterOptions.from_env({}), gates=ClusterGates.all_on())
        setup(manager, max_concurrent_reconciles=4, options=options)
        client = env.new_client()
        try:
            async with running_in_loop(manager):
                yield env, client
        finally:
            await client.close()
            await runtime.close()


@pytest.mark.parametrize("sample", SAMPLE_FILES)
async def test_sample_reaches_ready(sim_operator: tuple[Environment, Client], sample: str) -> None:
    env, client = sim_operator
    ns = await env.create_namespace(generate_name="sample-")
    docs = [d for d in yaml.safe_load_all((SAMPLES / sample).read_text()) if d]
    name = ""
    for doc in docs:
        res = KINDS.get(doc["kind"])
        if res is None:
            continue  # e.g. the sample's Redis Deployment: nothing in envtest would run it
        created = await client.create(res, doc, ns)
        if doc["kind"] == "RayCluster":
            name = created["metadata"]["name"]
    assert name

    async def ready() -> dict[str, Any] | None:
        try:
            obj = await client.get(C.RAYCLUSTERS, name, ns)
        except NotFound:
            return None
        return obj if (obj.get("status") or {}).get("state") == "ready" else None

    obj = await eventually(ready, f"{sample} ready", timeout=60.0)
    status = obj["status"]
    # zero counters are omitted (omitempty, as KubeRay writes them)
    assert status.get("readyWorkerReplicas", 0) == status.get("desiredWorkerReplicas", 0)
    assert status["head"]["podIP"]
